#!/usr/bin/env python3
"""Validate SARIF files against a JSON schema.

    python3 Scripts/validate-sarif.py SCHEMA FILE...

Uses the `jsonschema` module (Debian: apt-get install -y python3-jsonschema) with the draft the
schema declares in "$schema" (the OASIS SARIF 2.1.0 schema declares draft-04), Draft 7 when it
declares none. Prints one line per error, `FILE: $.json.path: message`, and exits 1 if any file
has an error, 2 if a file cannot be read or parsed or the module is missing, 0 otherwise.
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    # The python3 on PATH may not be the system one that python3-jsonschema installs into.
    system = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(system) and os.access(system, os.X_OK) \
            and not os.environ.get("VALIDATE_SARIF_REEXEC"):
        os.environ["VALIDATE_SARIF_REEXEC"] = "1"
        os.execv(system, [system] + sys.argv)
    sys.stderr.write("validate-sarif: the jsonschema module is missing: apt-get install -y python3-jsonschema\n")
    sys.exit(2)


def json_path(error):
    """$.runs[0].results[3].level: the instance path, JSONPath-style."""
    out = "$"
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        sys.stderr.write(f"validate-sarif: {path}: cannot read as JSON: {e}\n")
        sys.exit(2)


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: validate-sarif.py SCHEMA FILE...\n")
        return 2
    schema = load(argv[1])
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)
    # Formats ("uri", "date-time") are checked where the installed checkers can; others pass.
    validator = cls(schema, format_checker=getattr(cls, "FORMAT_CHECKER", None) or jsonschema.FormatChecker())
    failed = False
    for path in argv[2:]:
        document = load(path)
        errors = sorted(validator.iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path])
        for error in errors:
            failed = True
            message = " ".join(error.message.split())
            if len(message) > 240:  # messages quote the failing value, which can be a whole array
                message = message[:240] + "..."
            print(f"{path}: {json_path(error)}: {message}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
