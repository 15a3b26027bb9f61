#!/usr/bin/env python3
"""Writes Sources/AssignedNumbers/AssignedNumbers+Generated.swift from the Bluetooth SIG's
assigned numbers (the YAML files of https://bitbucket.org/bluetooth-SIG/public).

    Scripts/assigned-numbers.py DIR [--source TEXT] [-o FILE]

DIR is a copy of that repository, or of its assigned_numbers folder: the script reads
    uuids/service_uuids.yaml, characteristic_uuids.yaml, descriptors.yaml, declarations.yaml,
    member_uuids.yaml, sdo_uuids.yaml, units.yaml
    company_identifiers/company_identifiers.yaml
    core/appearance_values.yaml
--source says where the files came from (a URL and revision); it is written into the header
so the next refresh knows what it replaces. Python 3 standard library only: the files are
simple lists, read line by line, so PyYAML is not needed.
"""
import argparse
import os
import re
import subprocess
import sys

FILES = {
    "services": "uuids/service_uuids.yaml",
    "characteristics": "uuids/characteristic_uuids.yaml",
    "descriptors": "uuids/descriptors.yaml",
    "declarations": "uuids/declarations.yaml",
    "members": "uuids/member_uuids.yaml",
    "sdos": "uuids/sdo_uuids.yaml",
    "units": "uuids/units.yaml",
    "companies": "company_identifiers/company_identifiers.yaml",
    "appearances": "core/appearance_values.yaml",
}

ITEM = re.compile(r"^(\s*)-\s+(\w+):\s*(.*)$")
FIELD = re.compile(r"^(\s*)(\w+):\s*(.*)$")
ESCAPES = {"\\": "\\", '"': '"', "/": "/", "t": "\t"}
# LaTeX left in a few names ("CO\\textsubscript{2} Concentration"): printed as plain text.
LATEX = re.compile(r"\\text(?:subscript|superscript)\{([^{}]*)\}")


def scalar(text, where):
    """A YAML flow scalar as these files write them: plain, 'single' or "double" quoted."""
    text = text.strip()
    if text.startswith("'"):
        if not text.endswith("'") or len(text) < 2:
            sys.exit(f"error: {where}: unterminated quoted string: {text}")
        return text[1:-1].replace("''", "'")
    if text.startswith('"'):
        if not text.endswith('"') or len(text) < 2:
            sys.exit(f"error: {where}: unterminated quoted string: {text}")
        out, chars = [], iter(text[1:-1])
        for c in chars:
            if c == "\\":
                e = next(chars, "")
                if e not in ESCAPES:
                    sys.exit(f"error: {where}: escape \\{e} is not handled: {text}")
                c = ESCAPES[e]
            out.append(c)
        return "".join(out)
    if " #" in text:
        text = text.split(" #", 1)[0].rstrip()
    return text


def number(text, where):
    try:
        return int(scalar(text, where), 0)
    except ValueError:
        sys.exit(f"error: {where}: not a number: {text}")


def items(path):
    """Every list item of the file as (indent, key, value, fields), fields being the item's
    other 'key: value' lines (a nested list's items come out as items of their own)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            where = f"{path}:{n}"
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = ITEM.match(line)
            if m:
                out.append([len(m.group(1)), m.group(2), m.group(3), {}, where])
                continue
            m = FIELD.match(line)
            if m and out and len(m.group(1)) > out[-1][0]:
                out[-1][3][m.group(2)] = (m.group(3), where)
    return out


def pairs(path, key):
    """(number, name) for every '- key: 0x..' item with a name."""
    result = []
    for indent, k, value, fields, where in items(path):
        if k != key:
            continue
        if "name" not in fields:
            sys.exit(f"error: {where}: item without a name")
        result.append((number(value, where), LATEX.sub(r"\1", scalar(*fields["name"]))))
    return result


def appearances(path):
    """Appearance values (category << 6 | subcategory): the category alone, and each
    subcategory as 'Category: Subcategory'."""
    result = []
    category = None
    for indent, k, value, fields, where in items(path):
        if "name" not in fields:
            continue
        name = scalar(*fields["name"])
        if k == "category":
            category = (number(value, where), name)
            result.append((category[0] << 6, name))
        elif k == "value" and category is not None:
            sub = number(value, where)
            if sub > 0x3F:
                sys.exit(f"error: {where}: subcategory {sub:#x} does not fit in 6 bits")
            result.append(((category[0] << 6) | sub, f"{category[1]}: {name}"))
    return result


def table(entries, what):
    """Sorted by number; a number listed twice keeps its first name."""
    seen = {}
    for key, name in entries:
        name = " ".join(name.split())
        if not 0 <= key <= 0xFFFF:
            sys.exit(f"error: {what}: {key:#x} is not 16 bits")
        if not name:
            sys.exit(f"error: {what}: {key:#06x} has an empty name")
        seen.setdefault(key, name)
    return sorted(seen.items())


def render(tables, source):
    lines = [
        "// Generated by Scripts/assigned-numbers.py; do not edit. Refresh: make assigned-numbers YAML=DIR",
        "// From the Bluetooth SIG's assigned numbers (YAML), https://bitbucket.org/bluetooth-SIG/public",
    ]
    for chunk in source.splitlines():
        lines.append(f"// {chunk}")
    lines += [
        "// Names and numbers only. Each table is one string literal, a line per entry, \"XXXX name\"",
        "// sorted by number: AssignedNumbers.Table indexes it on first use. (An array literal of",
        "// thousands of tuples took 100 s to type-check; a string literal takes none.)",
        "",
        "extension AssignedNumbers {",
    ]
    for var, rows in tables:
        lines.append(f"    /// {len(rows)} entries.")
        lines.append(f'    static let {var} = Table("""')
        for key, name in rows:
            if "\n" in name or "\r" in name or '"""' in name:
                sys.exit(f"error: {var}: {key:#06x}: a name with a line break or three quotes: {name!r}")
            lines.append(f"        {key:04X} " + name.replace("\\", "\\\\"))
        lines.append('        """)')
        lines.append("")
    lines[-1] = "}"
    return "\n".join(lines) + "\n"


def git_revision(path):
    """'revision <sha> (<date>)' when DIR is a git checkout of the SIG's repository."""
    try:
        out = subprocess.run(["git", "-C", path, "log", "-1", "--format=%H %cs"], capture_output=True, text=True, check=True)
        sha, date = out.stdout.split()
        return f"revision {sha} ({date})"
    except (OSError, subprocess.CalledProcessError, ValueError):
        return "revision not recorded (not a git checkout; pass --source)"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", help="bluetooth-SIG/public checkout, or its assigned_numbers folder")
    parser.add_argument("--source", default="",
                        help="where DIR came from, for the generated file's header (default: DIR's git revision)")
    parser.add_argument("-o", "--output",
                        default=os.path.join(here, "..", "Sources", "AssignedNumbers", "AssignedNumbers+Generated.swift"))
    args = parser.parse_args()

    root = args.dir
    if os.path.isdir(os.path.join(root, "assigned_numbers")):
        root = os.path.join(root, "assigned_numbers")
    paths = {k: os.path.join(root, v) for k, v in FILES.items()}
    missing = [p for p in paths.values() if not os.path.isfile(p)]
    if missing:
        sys.exit("error: missing " + ", ".join(missing) + "\n(expected a bluetooth-SIG/public checkout)")

    tables = [
        ("companyTable", table(pairs(paths["companies"], "value"), "companies")),
        ("serviceTable", table(pairs(paths["services"], "uuid"), "services")),
        ("characteristicTable", table(pairs(paths["characteristics"], "uuid"), "characteristics")),
        ("descriptorTable", table(pairs(paths["descriptors"], "uuid"), "descriptors")),
        ("declarationTable", table(pairs(paths["declarations"], "uuid"), "declarations")),
        ("memberTable", table(pairs(paths["members"], "uuid"), "member UUIDs")),
        ("sdoTable", table(pairs(paths["sdos"], "uuid"), "SDO UUIDs")),
        ("unitTable", table(pairs(paths["units"], "uuid"), "units")),
        ("appearanceTable", table(appearances(paths["appearances"]), "appearances")),
    ]
    for var, rows in tables:
        if len(rows) < 4:
            sys.exit(f"error: {var}: only {len(rows)} entries; did the YAML format changed?")
    text = render(tables, args.source or git_revision(args.dir))
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    counts = ", ".join(f"{len(rows)} {var.removesuffix('Table')}" for var, rows in tables)
    print(f"wrote {os.path.relpath(args.output)}: {counts}")


if __name__ == "__main__":
    main()
