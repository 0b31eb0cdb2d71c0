#!/usr/bin/env python3
"""The default models are current: each is in its provider SDK's model list and on no deprecation
list within 90 days (the SDKs' own data, from PyPI: `anthropic` ships `types/model_param.py` and
`_data/deprecated_models.py`; `openai` ships `types/shared/chat_model.py`).

Usage: scripts/check-models.py [TODAY as YYYY-MM-DD]   (exit 1 with the reason when not)
"""
import datetime
import pathlib
import re
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def default_model(source: str) -> str:
    text = (ROOT / source).read_text()
    return re.search(r'pub const DEFAULT_MODEL: &str = "([^"]+)";', text).group(1)


def sdk(name: str, into: pathlib.Path) -> pathlib.Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--dest", str(into), name],
        check=True,
    )
    wheel = next(into.glob(f"{name}-*.whl"))
    out = into / name
    zipfile.ZipFile(wheel).extractall(out)
    version = wheel.name.split("-")[1]
    print(f"{name} SDK {version}")
    return out / name


def deprecations(anthropic: pathlib.Path) -> dict:
    scope: dict = {}
    exec((anthropic / "_data" / "deprecated_models.py").read_text(), scope)
    out = {}
    for model, when in scope["DEPRECATED_MODELS"].items():
        day = re.sub(r"(\d+)(st|nd|rd|th)", r"\1", when)
        out[model] = datetime.datetime.strptime(day, "%B %d, %Y").date()
    return out


def main() -> int:
    today = datetime.date.fromisoformat(sys.argv[1]) if len(sys.argv) > 1 else datetime.date.today()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        anthropic = sdk("anthropic", tmp)
        openai = sdk("openai", tmp)
        claude = default_model("src/llm/anthropic.rs")
        listed = set(re.findall(r'"([^"]+)"', (anthropic / "types" / "model_param.py").read_text()))
        if claude not in listed:
            failures.append(f"{claude} is not in the anthropic SDK's model list")
        ends = deprecations(anthropic)
        if claude in ends and ends[claude] <= today + datetime.timedelta(days=90):
            failures.append(f"{claude} reaches end of life on {ends[claude]} (within 90 days of {today})")
        gpt = default_model("src/llm/openai.rs")
        chat = set(re.findall(r'"([^"]+)"', (openai / "types" / "shared" / "chat_model.py").read_text()))
        if gpt not in chat:
            failures.append(f"{gpt} is not in the openai SDK's chat model list")
        print(f"defaults: anthropic {claude}, openai {gpt}")
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
