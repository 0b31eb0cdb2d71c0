"""Tests for textutil; run with `python3 test_textutil.py` (no pytest needed)."""

import sys

from textutil import slugify, truncate


def test_slugify_lowercases_words():
    assert slugify("Hello World") == "hello-world", slugify("Hello World")


def test_slugify_strips_accents():
    assert slugify("Crème Brûlée") == "creme-brulee", slugify("Crème Brûlée")


def test_slugify_collapses_separators():
    got = slugify("  Hello,  World! ")
    assert got == "hello-world", "expected 'hello-world', got %r" % got


def test_truncate_keeps_short_text():
    assert truncate("short", 10) == "short"


def test_truncate_adds_marker():
    got = truncate("abcdefghij", 6)
    assert got == "abc...", "expected 'abc...', got %r" % got


def main():
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")]
    failed = 0
    for name, func in tests:
        try:
            func()
            print("PASS", name)
        except AssertionError as err:
            failed += 1
            print("FAIL %s: %s" % (name, err))
    print("%d passed, %d failed" % (len(tests) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
