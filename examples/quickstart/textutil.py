"""Small text helpers used to build URL paths."""

import re
import unicodedata


def slugify(title):
    """Turn a title into a URL slug: "  Hello,  World! " -> "hello-world".

    Letters are lowercased and accents removed; every run of other
    characters becomes a single dash, with no dash at either end.
    """
    text = unicodedata.normalize("NFKD", title)
    text = text.encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]", "-", text)


def truncate(text, limit, marker="..."):
    """Shorten text to at most `limit` characters, ending with `marker`."""
    if len(text) <= limit:
        return text
    return text[: max(limit - len(marker), 0)] + marker
