#!/usr/bin/env python3
"""Documents as topicd accepts them: keys it does not know moved into `meta`.

topicd refuses a document key it does not know (a typo such as "lables" must not vanish
silently); data files carry extra keys (AppStream: `package`, `type`, `n_desc_langs`;
the shared builders' files: `source`; Reuters: `title`). Every bench script that uploads
or fits such a file goes through here. Standard library only.

    python3 bench/strict_docs.py IN.jsonl > OUT.jsonl   # a file for curl or `topicd fit --input`
"""
import json
import sys

# The keys of a document (`RawDocument`); `bow` is the alias of `counts`.
DOCUMENT_KEYS = {"id", "text", "counts", "bow", "labels", "paths", "features", "covariates", "split", "meta"}


def strict(doc):
    """The document with every unknown key moved into its `meta` object."""
    extra = {k: v for k, v in doc.items() if k not in DOCUMENT_KEYS}
    if not extra:
        return doc
    out = {k: v for k, v in doc.items() if k in DOCUMENT_KEYS}
    out["meta"] = {**doc.get("meta", {}), **extra}
    return out


def strict_line(line):
    """One NDJSON line (str) made strict; blank lines and `{"tree": ...}` lines unchanged."""
    if not line.strip():
        return line
    doc = json.loads(line)
    if "tree" in doc:
        return line
    return json.dumps(strict(doc), ensure_ascii=False)


def strict_ndjson(path):
    """The file at `path` as an NDJSON upload body (bytes), unknown keys moved into meta."""
    with open(path, encoding="utf-8") as f:
        return "\n".join(strict_line(line.rstrip("\n")) for line in f).encode()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.stdout.buffer.write(strict_ndjson(sys.argv[1]) + b"\n")
