#!/usr/bin/env python3
"""Dev aid: build an HTML report from Sources/Report/HTMLTemplate.swift and a timeline JSON file,
the way the Swift renderer does (title HTML-escaped, every '<' in the JSON written as \\u003c).

    python3 render-fixture.py [timeline.json] [out.html] [title]
"""
import html, json, pathlib, sys

here = pathlib.Path(__file__).resolve().parent
root = here.parents[2]
src = (root / "Sources/Report/HTMLTemplate.swift").read_text(encoding="utf-8")
open_mark, close_mark = 'static let page: String = #"""\n', '\n"""#'
page = src[src.index(open_mark) + len(open_mark):src.rindex(close_mark)]

json_path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here / "sample-timeline.json"
out_path = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else pathlib.Path("/tmp/report.html")
doc = json.loads(json_path.read_text(encoding="utf-8"))
title = sys.argv[3] if len(sys.argv) > 3 else "GATTLab timeline: " + str(doc.get("capture", {}).get("path", ""))

data = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
# Split on the placeholders once, so text inserted for one can never be taken for the other.
head, rest = page.split("__GATTLAB_TITLE__", 1)
middle, tail = rest.split("__GATTLAB_TIMELINE_JSON__", 1)
out_path.write_text(head + html.escape(title, quote=True) + middle + data + tail, encoding="utf-8")
print(out_path)
