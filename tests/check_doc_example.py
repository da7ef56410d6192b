#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program quoted in a document is the program that is built and run.

usage: check_doc_example.py DOC

Every code block of DOC preceded by a line `<!-- example: PATH -->` (PATH
relative to the source root, the parent of DOC's directory) must equal that
file byte for byte.
"""
import os
import re
import sys


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    doc = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(doc)))
    text = open(doc, encoding="utf-8").read()
    blocks = re.findall(r"<!-- example: (\S+) -->\n```[a-z]*\n(.*?)```", text,
                        re.S)
    if not blocks:
        print("%s quotes no example" % doc)
        return 1
    bad = 0
    for path, body in blocks:
        src = open(os.path.join(root, path), encoding="utf-8").read()
        same = src == body
        print("%s: %s" % (path, "identical" if same else "DIFFERS"))
        bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
