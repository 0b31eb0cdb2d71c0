#!/usr/bin/env python3
"""Validates the model request bodies a fix-mode run sent (recorded by
`cargo test --test providers request_bodies_…` into target/tmp/, and the tool-image bodies of
`tool_images_go_on_every_wire`, recorded when `QA_LOOP_RECORD_IMAGE_REQUESTS` names that directory) against the providers' own
published artefacts: OpenAI's OpenAPI description (the trimmed CreateChatCompletionRequest and CreateResponse
schemas in tests/fixtures/openai/) and the `anthropic` SDK's request types (PyPI; its `Iterable` fields
are consumed so that pydantic validates every item).

Usage: scripts/validate-requests.py [TMPDIR]   (default target/tmp)
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def force(value):
    """Consumes pydantic's lazy iterators so every nested item is validated."""
    if isinstance(value, dict):
        return {k: force(v) for k, v in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    try:
        return [force(v) for v in value]
    except TypeError:
        return value


def load(tmp: pathlib.Path, wire: str) -> list:
    """The recorded bodies of one wire: the fix-mode run's, then the tool-image request's."""
    bodies = json.loads((tmp / f"requests-{wire}.json").read_text())
    images = tmp / f"image-requests-{wire}.json"
    if not images.exists():
        sys.exit(f"{images} is missing: run the tests with QA_LOOP_RECORD_IMAGE_REQUESTS={tmp}")
    return bodies + json.loads(images.read_text())


def main() -> int:
    tmp = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "tmp"
    failures = 0

    import jsonschema

    schema = json.loads(
        (ROOT / "tests/fixtures/openai/create-chat-completion-request.schema.json").read_text()
    )
    validator = jsonschema.Draft202012Validator(schema)
    openai = load(tmp, "openai")
    for i, body in enumerate(openai):
        for error in validator.iter_errors(body):
            failures += 1
            print(f"openai request {i}: {error.json_path}: {error.message[:300]}")
    print(f"openai: {len(openai)} request bodies checked against OpenAI's OpenAPI description")

    schema = json.loads((ROOT / "tests/fixtures/openai/create-response.schema.json").read_text())
    # The description's `InputItem` is a `oneOf` whose branches `EasyInputMessage` and `Item`
    # (`InputMessage`) both match every message with a content list — the shape of OpenAI's own
    # image-input example — so a strict `oneOf` rejects valid input: read it as `anyOf`.
    item = schema["$defs"]["InputItem"]
    item["anyOf"] = item.pop("oneOf")
    validator = jsonschema.Draft202012Validator(schema)
    responses = load(tmp, "responses")
    for i, body in enumerate(responses):
        for error in validator.iter_errors(body):
            failures += 1
            print(f"responses request {i}: {error.json_path}: {error.message[:300]}")
    print(f"responses: {len(responses)} request bodies checked against OpenAI's OpenAPI description (CreateResponse)")

    from pydantic import TypeAdapter
    from anthropic.types.message_create_params import (
        MessageCreateParamsNonStreaming,
        MessageCreateParamsStreaming,
    )
    import anthropic

    # The adapters live as long as the lazy iterators their results hold.
    adapters = {
        kind: TypeAdapter(kind)
        for kind in (MessageCreateParamsStreaming, MessageCreateParamsNonStreaming)
    }
    bodies = load(tmp, "anthropic")
    for i, body in enumerate(bodies):
        kind = MessageCreateParamsStreaming if body.get("stream") else MessageCreateParamsNonStreaming
        # pydantic ignores keys a TypedDict does not declare: a misspelt parameter is caught here.
        known = kind.__required_keys__ | kind.__optional_keys__
        unknown = sorted(set(body) - known)
        if unknown:
            failures += 1
            print(f"anthropic request {i}: parameters the API does not have: {unknown}")
        try:
            force(adapters[kind].validate_python(body))
        except Exception as e:  # pydantic.ValidationError
            failures += 1
            print(f"anthropic request {i}: {str(e)[:600]}")
    print(f"anthropic: {len(bodies)} request bodies checked against the anthropic SDK {anthropic.__version__} types")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
