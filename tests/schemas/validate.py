#!/usr/bin/python3
"""Validates fabcheck JSON documents against docs/schemas/ with a real JSON Schema validator.

Usage: tests/schemas/validate.py FILE...   (each FILE one document; its "schema" member picks
the schema, docs/schemas/SCHEMA.json). Exit 0 when every document is valid, 1 naming each that
is not (the first errors, with where they are), 2 when the validator cannot run.

Needs Debian's python3-jsonschema (tests/deps.sh installs it); run with /usr/bin/python3, the
interpreter that package serves, whatever python3 is first on the PATH.
"""
import json
import pathlib
import sys

try:
    from jsonschema import Draft202012Validator, RefResolver
except ImportError:
    print("validate.py: python3-jsonschema is missing: run tests/deps.sh (apt-get install python3-jsonschema)", file=sys.stderr)
    sys.exit(2)

SCHEMAS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "schemas"
BASE = "https://fabcheck.invalid/schemas/"


def load_store():
    store = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text())
        Draft202012Validator.check_schema(schema)
        if schema.get("$id") != BASE + path.name:
            print(f"validate.py: {path} has $id {schema.get('$id')!r}, want {BASE + path.name!r}", file=sys.stderr)
            sys.exit(2)
        store[schema["$id"]] = schema
    return store


def main(files):
    if not files:
        print("validate.py: no documents given: nothing validated is not a pass", file=sys.stderr)
        return 2
    store = load_store()
    bad = 0
    for name in files:
        try:
            doc = json.loads(pathlib.Path(name).read_text())
        except (OSError, ValueError) as e:
            print(f"{name}: not one JSON document: {e}")
            bad += 1
            continue
        kind = doc.get("schema") if isinstance(doc, dict) else None
        schema = store.get(f"{BASE}{kind}.json") if isinstance(kind, str) else None
        if schema is None:
            print(f"{name}: no schema in docs/schemas/ for {kind!r}")
            bad += 1
            continue
        validator = Draft202012Validator(schema, resolver=RefResolver(schema["$id"], schema, store=store))
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            bad += 1
            for e in errors[:5]:
                where = "/".join(str(p) for p in e.absolute_path) or "(top)"
                print(f"{name}: {kind}: at {where}: {e.message[:300]}")
    print(f"validate.py: {len(files) - bad} of {len(files)} documents valid", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
