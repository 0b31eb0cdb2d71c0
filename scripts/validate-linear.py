#!/usr/bin/env python3
"""Validates what qa-loop sends to Linear against Linear's published GraphQL schema
(tests/fixtures/linear/schema.graphql, see its README) with graphql-core:
  - src/notify/linear.graphql, every document qa-loop sends;
  - every request tests/notify.rs recorded from a real run (TMPDIR/linear-requests.json):
    its document, its operation, and its variables coerced against the operation's definitions.

Usage: scripts/validate-linear.py [TMPDIR]   (default target/tmp)
"""
import json
import pathlib
import sys

from graphql import build_schema, parse, validate
from graphql.execution.values import get_variable_values
from graphql.language import OperationDefinitionNode

ROOT = pathlib.Path(__file__).resolve().parent.parent


def check(schema, document: str, where: str, operation=None, variables=None) -> int:
    failures = 0
    try:
        doc = parse(document)
    except Exception as e:  # GraphQLSyntaxError
        print(f"{where}: does not parse: {e}")
        return 1
    for error in validate(schema, doc):
        failures += 1
        print(f"{where}: {error.message}")
    if operation is not None:
        ops = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
        op = next((d for d in ops if d.name and d.name.value == operation), None)
        if op is None:
            print(f"{where}: no operation {operation!r} in the document")
            return failures + 1
        coerced = get_variable_values(schema, op.variable_definitions or [], variables or {})
        if isinstance(coerced, list):
            for error in coerced:
                failures += 1
                print(f"{where}: variables: {error.message}")
    return failures


def main() -> int:
    tmp = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "tmp"
    schema = build_schema((ROOT / "tests/fixtures/linear/schema.graphql").read_text())
    documents = (ROOT / "src/notify/linear.graphql").read_text()
    failures = check(schema, documents, "src/notify/linear.graphql")
    recorded = tmp / "linear-requests.json"
    if not recorded.exists():
        print(f"{recorded} is missing: run `cargo test --test notify` first")
        return 1
    requests = json.loads(recorded.read_text())
    operations = set()
    for i, body in enumerate(requests):
        operations.add(body.get("operationName"))
        failures += check(schema, body["query"], f"request {i} ({body.get('operationName')})",
                          body.get("operationName"), body.get("variables"))
    print(f"linear: the documents and {len(requests)} recorded requests ({', '.join(sorted(operations))}) "
          f"checked against Linear's schema")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
