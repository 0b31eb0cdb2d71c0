#!/usr/bin/env python3
"""The model registry (src/llm/models.toml) against the providers' own SDKs.

Reads the model lists and deprecation data the installed `anthropic` and `openai` packages ship
(`anthropic.types.ModelParam` and `anthropic._data.DEPRECATED_MODELS`; `openai.types.shared`'s
`ChatModel` and `ResponsesModel`, and the shutdown dates in `chat_model.py`'s docstring) and
fails, with one line per model, when the registry disagrees:

- a model the SDKs list and do not deprecate is neither in the registry nor under its [[skip]];
- a registry id the SDKs do not list is not marked `retired` or `custom`;
- a retirement date differs from the SDK's (or one side has none), a retired entry is one the
  SDK still lists without a date, or a Responses-only model is marked `api = "chat"`;
- a default model (src/llm/anthropic.rs, src/llm/openai.rs) is not current;
- a [[skip]] entry names a model the SDKs no longer list, or one the registry lists.

CI installs the SDK versions pinned in .ci/model-sdks.txt (deterministic); the scheduled
workflow .github/workflows/models.yml installs the newest ones.

Usage: .ci/check-models.py [--registry PATH]
Exit 0 when they agree, 1 with the lines when not, 2 when an SDK's data cannot be read.
"""
import argparse
import ast
import datetime
import pathlib
import re
import sys
import tomllib
import typing

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULTS = {"anthropic": "src/llm/anthropic.rs", "openai": "src/llm/openai.rs"}


class SdkError(Exception):
    """The SDK's data is not where or in the shape this script reads."""


def literals(t) -> list:
    """Every string of a `Literal[...]`, also inside `Union`s and aliases of them."""
    out = []
    for arg in typing.get_args(t):
        if isinstance(arg, str):
            out.append(arg)
        else:
            out.extend(literals(arg))
    return out


def anthropic_date(text: str) -> datetime.date:
    """`January 22nd, 2027` -> 2027-01-22."""
    day = re.sub(r"(\d+)(st|nd|rd|th)\b", r"\1", text.strip())
    return datetime.datetime.strptime(day, "%B %d, %Y").date()


def docstring_after(source: str, name: str) -> str:
    """The string statement right after the assignment to `name` (a type alias's docstring)."""
    body = ast.parse(source).body
    for node, following in zip(body, body[1:]):
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
                return str(following.value.value)
    raise SdkError(f"no docstring after `{name}`")


def shutdowns(doc: str) -> tuple:
    """The `Deprecated values:` bullets of `chat_model.py`: {id: date}, and the ids the SDK keeps
    though they are no supported model."""
    if "Deprecated values:" not in doc:
        raise SdkError("chat_model.py's docstring has no `Deprecated values:` list")
    dates, unsupported = {}, set()
    for bullet in re.split(r"\n\s*- ", "\n" + doc.split("Deprecated values:", 1)[1])[1:]:
        text = " ".join(bullet.split())
        ids = re.findall(r'"([^"]+)"', text)
        when = re.search(r"shutdown date:\s*(\d{4}-\d{2}-\d{2})", text)
        if not ids:
            raise SdkError(f"a deprecation note names no model: {text!r}")
        if when:
            for i in ids:
                dates[i] = datetime.date.fromisoformat(when.group(1))
        elif "Not a supported model ID" in text:
            unsupported.update(ids)
        else:
            raise SdkError(f"cannot read the deprecation note: {text!r}")
    return dates, unsupported


def anthropic_sdk() -> dict:
    import anthropic
    from anthropic._data import DEPRECATED_MODELS
    from anthropic.types import ModelParam

    listed = literals(ModelParam)
    if not listed:
        raise SdkError("anthropic.types.ModelParam lists no model")
    return {
        "name": "anthropic",
        "version": anthropic.__version__,
        "listed": set(listed),
        "responses_only": set(),
        "retires": {m: anthropic_date(d) for m, d in DEPRECATED_MODELS.items()},
        "unsupported": set(),
    }


def openai_sdk() -> dict:
    import openai
    from openai.types.shared import chat_model, responses_model

    chat = set(literals(chat_model.ChatModel))
    responses = set(literals(responses_model.ResponsesModel))
    if not chat:
        raise SdkError("openai.types.shared.ChatModel lists no model")
    doc = docstring_after(pathlib.Path(chat_model.__file__).read_text(), "ChatModel")
    dates, unsupported = shutdowns(doc)
    return {
        "name": "openai",
        "version": openai.__version__,
        "listed": chat | responses,
        "responses_only": responses - chat,
        "retires": dates,
        "unsupported": unsupported,
    }


def is_snapshot(rest: str) -> bool:
    """What follows a model id in a dated snapshot of it (the registry's own rule)."""
    if rest == "":
        return True
    if not rest[:1] in ("-", "@"):
        return False
    parts = rest[1:].split("-")
    if len(parts) == 1:
        return len(parts[0]) == 8 and parts[0].isdigit()
    return [len(p) for p in parts] == [4, 2, 2] and all(p.isdigit() for p in parts)


def lookup(entries: dict, model: str):
    """The entry for `model`: its exact id, else the entry it is a dated snapshot of."""
    if model in entries:
        return entries[model]
    return next((e for base, e in entries.items() if model.startswith(base) and is_snapshot(model[len(base):])), None)


def sdk_of(entry: dict) -> str:
    return "anthropic" if entry.get("api") == "messages" else "openai"


def check_entries(models: dict, sdks: dict) -> list:
    """Each registry entry against its SDK's list and dates."""
    out = []
    for mid, e in models.items():
        sdk = sdks[sdk_of(e)]
        label = f"{sdk['name']} {sdk['version']}"
        status, retires = e.get("status"), e.get("retires")
        if mid not in sdk["listed"]:
            if status not in ("retired", "custom"):
                out.append(f"{mid}: not in the {label} model lists, but marked {status}: mark it retired (with its date when known) or custom")
            continue
        if status == "custom":
            out.append(f"{mid}: marked custom, but {label} lists it: give it its status")
        if mid in sdk["unsupported"] and status not in ("retired", "custom"):
            out.append(f"{mid}: {label} keeps it only for compatibility (not a supported model ID), but it is marked {status}")
        if mid in sdk["responses_only"] and e.get("api") != "responses":
            out.append(f"{mid}: api {e.get('api')}, but {label} lists it for the Responses API only")
    return out


def check_listed(models: dict, skips: dict, sdks: dict) -> list:
    """Each model the SDKs list against the registry: present (or skipped), the same dates."""
    out = []
    for sdk in sdks.values():
        label = f"{sdk['name']} {sdk['version']}"
        for mid in sorted(sdk["listed"]):
            entry, sdk_date = lookup(models, mid), sdk["retires"].get(mid)
            if entry is None:
                if sdk_date is None and mid not in sdk["unsupported"] and lookup(skips, mid) is None:
                    out.append(f"{mid}: listed by {label} (not deprecated), but neither in the registry nor under its [[skip]]")
                continue
            ours = entry.get("retires")
            ours = datetime.date.fromisoformat(ours) if ours else None
            if sdk_date != ours:
                theirs = f"retires on {sdk_date}" if sdk_date else "has no retirement date"
                mine = f"retires on {ours}" if ours else f"has none (status {entry.get('status')})"
                out.append(f"{mid}: {label} says it {theirs}; the registry entry `{entry['id']}` {mine}")
            elif sdk_date is None and entry.get("status") == "retired":
                out.append(f"{mid}: marked retired, but {label} lists it without a retirement date")
    return out


def check_skips(models: dict, skips: dict, sdks: dict) -> list:
    out = []
    listed = set().union(*(s["listed"] for s in sdks.values()))
    for sid, s in skips.items():
        if not str(s.get("reason", "")).strip():
            out.append(f"{sid}: under [[skip]] without a reason")
        if not any(m == sid or (m.startswith(sid) and is_snapshot(m[len(sid):])) for m in listed):
            out.append(f"{sid}: under [[skip]], but no SDK lists it any more: remove it")
        if lookup(models, sid) is not None:
            out.append(f"{sid}: both in the registry and under [[skip]]")
    return out


def check_defaults(models: dict, sdks: dict) -> list:
    out = []
    for name, source in DEFAULTS.items():
        text = (ROOT / source).read_text()
        found = re.search(r'pub const DEFAULT_MODEL: &str = "([^"]+)";', text)
        if not found:
            out.append(f"{source}: no DEFAULT_MODEL found")
            continue
        mid = found.group(1)
        entry = models.get(mid)
        if entry is None or entry.get("status") != "current":
            state = entry.get("status") if entry else "missing"
            out.append(f"{mid}: the default model of {source} must be current in the registry ({state})")
        elif mid not in sdks[name]["listed"] or mid in sdks[name]["retires"]:
            out.append(f"{mid}: the default model of {source} is not a current model of {name} {sdks[name]['version']}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--registry", type=pathlib.Path, default=ROOT / "src/llm/models.toml")
    args = parser.parse_args()
    try:
        sdks = {"anthropic": anthropic_sdk(), "openai": openai_sdk()}
    except (ImportError, SdkError, ValueError) as e:
        print(f"cannot read the SDKs' model data: {e}", file=sys.stderr)
        return 2
    try:
        table = tomllib.loads(args.registry.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        print(f"{args.registry}: {e}", file=sys.stderr)
        return 2
    models = {m["id"]: m for m in table.get("model", [])}
    skips = {s["id"]: s for s in table.get("skip", [])}
    problems = (check_entries(models, sdks) + check_listed(models, skips, sdks)
                + check_skips(models, skips, sdks) + check_defaults(models, sdks))
    versions = ", ".join(f"{s['name']} {s['version']}" for s in sdks.values())
    for p in problems:
        print(p)
    if problems:
        print(f"{args.registry}: {len(problems)} disagreement(s) with {versions}", file=sys.stderr)
        return 1
    print(f"{args.registry}: {len(models)} models and {len(skips)} skipped agree with {versions}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
