#!/usr/bin/env python3
"""Validates what qa-loop sends to GitHub's GraphQL API against GitHub's published schema (npm
@octokit/graphql-schema, its introspection result `schema.json`) with graphql-core:
  - every GraphQL document in src/github/threads.rs (its `pub const …: &str = "query|mutation …"`),
    valid and using no deprecated field;
  - every request tests/github/threads.rs recorded from real runs (TMPDIR/github-graphql.json): its
    document, its operation, its variables coerced against the operation's definitions — and
    both documents of threads.rs among them;
  - the fake GitHub's answer to each: executing the document against the schema over the answer's
    `data` gives that same `data` back (every field the document asks for, of the schema's types).

Usage: scripts/validate-github-graphql.py SCHEMA_JSON [TMPDIR]   (default target/tmp)
"""
import json
import pathlib
import re
import sys

from graphql import build_client_schema, execute, parse, specified_rules, validate
from graphql.execution.values import get_variable_values
from graphql.language import OperationDefinitionNode
from graphql.validation import NoDeprecatedCustomRule

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src/github/threads.rs"
RULES = [*specified_rules, NoDeprecatedCustomRule]


def operation_of(doc, name):
    ops = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
    return next((d for d in ops if d.name and d.name.value == name), None)


def check(schema, document, where, operation=None, variables=None):
    failures = []
    try:
        doc = parse(document)
    except Exception as e:  # GraphQLSyntaxError
        return [f"{where}: does not parse: {e}"], None
    failures += [f"{where}: {e.message}" for e in validate(schema, doc, RULES)]
    if operation is not None:
        op = operation_of(doc, operation)
        if op is None:
            return failures + [f"{where}: no operation {operation!r} in the document"], None
        coerced = get_variable_values(schema, op.variable_definitions or [], variables or {})
        if isinstance(coerced, list):
            failures += [f"{where}: variables: {e.message}" for e in coerced]
    return failures, doc


def check_answer(schema, doc, operation, variables, response, where):
    if response.get("errors"):
        return [] if response.get("data") is None or all(
            v is None for v in response["data"].values()) else [
            f"{where}: an answer with errors has data: {response}"]
    data = response.get("data")
    if data is None:
        return [f"{where}: an answer with neither data nor errors"]
    result = execute(schema, doc, root_value=data, variable_values=variables,
                     operation_name=operation)
    failures = [f"{where}: answer: {e.message} at {e.path}" for e in result.errors or []]
    if result.data != data:
        failures.append(f"{where}: the answer is not what the document asks for:\n"
                        f"  answered            {json.dumps(data)}\n  the document gives  {json.dumps(result.data)}")
    return failures


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    introspection = json.loads(pathlib.Path(sys.argv[1]).read_text())
    schema = build_client_schema(introspection.get("data", introspection))
    tmp = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "target" / "tmp"
    failures = []
    documents = {}
    for name, text in re.findall(r'pub const (\w+): &str =\s*"((?:query|mutation)[^"]*)";',
                                 SOURCE.read_text()):
        found, doc = check(schema, text, f"{SOURCE.name} {name}")
        failures += found
        op = next(d for d in doc.definitions if isinstance(d, OperationDefinitionNode))
        documents[op.name.value] = text
    if len(documents) < 2:
        failures.append(f"{SOURCE}: expected the threads query and the resolve mutation, found {sorted(documents)}")
    recorded = tmp / "github-graphql.json"
    if not recorded.exists():
        print(f"{recorded} is missing: run `cargo test --test github threads` first")
        return 1
    exchanges = json.loads(recorded.read_text())
    seen = set()
    for i, x in enumerate(exchanges):
        body, response = x["request"], x["response"]
        name = body.get("operationName")
        where = f"request {i} ({name})"
        seen.add(name)
        if documents.get(name) != body["query"]:
            failures.append(f"{where}: not a document of {SOURCE.name}")
        found, doc = check(schema, body["query"], where, name, body.get("variables"))
        failures += found
        if doc is not None and not found:
            failures += check_answer(schema, doc, name, body.get("variables"), response, where)
    missing = set(documents) - seen
    if missing:
        failures.append(f"{recorded}: no recorded request of {sorted(missing)}")
    for f in failures:
        print(f)
    print(f"github graphql: {len(documents)} documents and {len(exchanges)} recorded requests and answers "
          f"({', '.join(sorted(n for n in seen if n))}) checked against GitHub's schema: "
          f"{'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
