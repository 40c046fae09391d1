#!/usr/bin/env python3
"""Writes corpus.jsonl: the canonical JSON bytes and SHA-256 that Python's json module gives.

Each line is {"name", "input", "canonical_hex", "sha256"}. "input" is JSON text for the C++
side to parse; the expected bytes come from json.loads of that same text, so both sides start
from the same value. Deterministic: rerunning it rewrites the same file.

    python3 tests/data/canonical/generate.py
"""

import hashlib
import json
import pathlib
import random
import struct

OUT = pathlib.Path(__file__).with_name("corpus.jsonl")
SEED = 20240611


def canonical(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def fixed_values():
    """Hand-picked values; the name says what each one exercises."""
    yield "null", None
    yield "true", True
    yield "false", False
    yield "empty_object", {}
    yield "empty_array", []
    yield "empty_string", ""
    for c in range(0x20):
        yield f"control_{c:02x}", f"a{chr(c)}b"
    yield "all_controls", "".join(chr(c) for c in range(0x20))
    yield "del", "\x7f"
    yield "quotes_backslashes", 'say "hi" \\ back\\slash \\" \\\\'
    yield "solidus_not_escaped", "a/b</script>"
    yield "line_separators", "x\u2028y\u2029z"
    yield "latin_cjk", "caf\u00e9 \u4e2d\u6587 \u0416"
    yield "emoji", "\U0001f600\U0001f680"
    yield "max_code_point", "\U0010ffff"
    yield "bom_and_nonchars", "\ufeff\ufffe\uffff\ufffd"
    yield "nul_in_key", {"a\x00b": 1, "a": 2}
    yield "keys_ascii_case", {"b": 1, "a": 2, "B": 3, "A": 4, "_": 5, "0": 6}
    yield "keys_accents", {"e": 1, "\u00e9": 2, "e\u0301": 3, "f": 4, "E": 5}
    yield "keys_non_bmp_vs_bmp", {
        "\U0001f600": 1, "\uffff": 2, "\ue000": 3, "\U00010000": 4, "z": 5,
    }
    yield "keys_prefixes", {"ab": 1, "a": 2, "abc": 3, "": 4, "a\x7f": 5, "a\x80": 6}
    yield "keys_escaped", {'"': 1, "\\": 2, "\n": 3, "\x1f": 4}
    yield "nested", {
        "z": [1, {"b": [], "a": {}}, [[["deep"]]]], "a": {"y": None, "x": [True, False]},
    }
    yield "array_of_empties", [[], {}, "", 0, 0.0, None]
    yield "int_zero", 0
    yield "int_small", [1, -1, 42, -42, 1000000]
    yield "int64_max", 2**63 - 1
    yield "int64_min", -(2**63)
    yield "uint64_max", 2**64 - 1
    yield "int_2_63", 2**63
    yield "int_boundaries", [2**31 - 1, -(2**31), 2**32, 2**53, 2**53 + 1, -(2**53) - 1]
    # Past 64 bits Python's int stays exact; nlohmann alone would round these to doubles.
    yield "int_2_64", 2**64
    yield "int_below_int64_min", -(2**63) - 1
    yield "int_big_mixed", {"n": [2**64, -(2**64), 10**40, 2**64 - 1], "f": 2.0**64}
    yield "int_4300_digits", 10**4299
    yield "int_neg_4300_digits", -(10**4299) + 1
    floats = {
        "0_1": 0.1, "1_5": 1.5, "neg_zero": -0.0, "zero": 0.0, "one": 1.0, "neg_one": -1.0,
        "1e15": 1e15, "1e16": 1e16, "9_99e15": 9999999999999998.0, "1e17": 1e17,
        "1e-4": 1e-4, "1e-5": 1e-5, "9_9e-5": 9.9e-5, "1_5e-7": 1.5e-07, "123_456": 123.456,
        "123456789_125": 123456789.125, "1e100": 1e100, "1e-100": 1e-100, "2_5e-308": 2.5e-308,
        "min_subnormal": 5e-324, "max_double": 1.7976931348623157e308,
        "min_normal": 2.2250738585072014e-308, "third": 1 / 3, "two_thirds": 2 / 3,
        "pi": 3.141592653589793, "neg_e": -2.718281828459045, "0_1_plus_0_2": 0.1 + 0.2,
        "2_pow_53": 2.0**53, "2_pow_63": 2.0**63, "2_pow_64": 2.0**64, "1e22": 1e22,
        "1e23": 1e23, "big_fixed": 1234567890123456.7, "small_fixed": 0.000123456789,
        "neg_small_exp": -1.2345e-10, "half": 0.5, "100": 100.0, "1e21": 1e21,
    }
    for name, value in floats.items():
        yield f"float_{name}", value
    yield "float_mixed_array", list(floats.values())


def fixed_texts():
    """JSON texts whose parsing matters: number spellings, whitespace, escapes, duplicates."""
    yield "text_minus_zero_int", "-0"
    yield "text_exponent_int_spelling", "[1E2, 1e+2, 1.0e2, 100.0, 1e0]"
    yield "text_float_spellings", "[0.10, 1.50000, 5e-1, -0.0e0, 12.5E-3]"
    yield "text_whitespace", ' \n\t{ "b" : [ 1 , 2 ] ,\r\n "a" : "x" } '
    yield "text_unicode_escapes", '"\\u00e9\\ud83d\\ude00\\u2028\\u0000\\u001F\\/"'
    yield "text_duplicate_keys", '{"a": 1, "b": 2, "a": 3}'
    yield "text_raw_utf8", '{"\u00e9": "\U0001f600", "\u0416": ["\u4e2d"]}'


def random_string(rng):
    pools = [
        (0x20, 0x7E), (0x00, 0x1F), (0x7F, 0xFF), (0x100, 0x7FF), (0x800, 0xD7FF),
        (0xE000, 0xFFFF), (0x10000, 0x10FFFF), (0x2000, 0x206F),
    ]
    out = []
    for _ in range(rng.randrange(0, 12)):
        low, high = rng.choice(pools)
        out.append(chr(rng.randint(low, high)))
    return "".join(out)


def random_float(rng):
    while True:
        if rng.random() < 0.5:
            value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        else:
            value = rng.choice([-1, 1]) * rng.random() * 10.0 ** rng.randint(-25, 25)
        if value == value and abs(value) != float("inf"):
            return value


def random_value(rng, depth):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-(2**63), 2**64 - 1) if rng.random() < 0.5 else rng.randint(-1000, 1000)
    if kind == 2:
        return random_float(rng)
    if kind in (3, 4):
        return random_string(rng)
    if kind in (5, 6):
        return {random_string(rng): random_value(rng, depth + 1) for _ in range(rng.randrange(5))}
    return [random_value(rng, depth + 1) for _ in range(rng.randrange(5))]


def cases():
    for i, (name, value) in enumerate(fixed_values()):
        # Alternate escaped and raw input so the parser sees both spellings of non-ASCII.
        yield name, json.dumps(value, ensure_ascii=i % 2 == 0)
    yield from fixed_texts()
    rng = random.Random(SEED)
    for i in range(300):
        yield f"random_float_{i}", repr(random_float(rng))
    for i in range(200):
        yield f"random_value_{i}", json.dumps(random_value(rng, 0), ensure_ascii=i % 2 == 0)
    # A stream of its own, so the cases above keep their values.
    big = random.Random(SEED + 1)
    for i in range(50):
        magnitude = big.randint(2**64, 10 ** big.randint(20, 120))
        yield f"random_big_int_{i}", json.dumps([magnitude * big.choice([-1, 1]), i])


def main():
    lines = []
    for name, text in cases():
        data = canonical(json.loads(text))
        record = {
            "name": name,
            "input": text,
            "canonical_hex": data.hex(),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        lines.append(json.dumps(record, ensure_ascii=True))
    OUT.write_text("\n".join(lines) + "\n", encoding="ascii")
    print(f"wrote {len(lines)} cases to {OUT}")


if __name__ == "__main__":
    main()
