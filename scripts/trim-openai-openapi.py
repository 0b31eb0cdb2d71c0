#!/usr/bin/env python3
"""Cuts OpenAI's OpenAPI description down to one request schema and everything it references,
as a standalone JSON Schema (2020-12) document.

The description is the public repository `openai/openai-openapi` (`openapi.json`, OpenAPI 3.1).
Usage: scripts/trim-openai-openapi.py OPENAPI.json COMMIT SCHEMA_NAME > OUT.schema.json
(tests/fixtures/openai/ holds the output for CreateChatCompletionRequest.)
"""
import json
import sys


def refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def main() -> None:
    path, commit, root = sys.argv[1:4]
    spec = json.load(open(path))
    schemas = spec["components"]["schemas"]
    keep, todo = set(), [root]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        todo.extend(r.rsplit("/", 1)[-1] for r in refs(schemas[name]))
    defs = json.loads(
        json.dumps({n: schemas[n] for n in sorted(keep)}).replace(
            '"#/components/schemas/', '"#/$defs/'
        )
    )
    out = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": f"{root} and what it references, from openai/openai-openapi openapi.json "
        f"at commit {commit} (OpenAPI {spec['openapi']}, API {spec['info']['version']}); "
        "cut by scripts/trim-openai-openapi.py",
        "$ref": f"#/$defs/{root}",
        "$defs": defs,
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
