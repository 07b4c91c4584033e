#!/usr/bin/env python3
"""Fails when a function body outside the tests is longer than the limit (issue 19: no function
over 150 lines). Relies on the committed .clang-format layout: a function's opening brace is alone
on the line after its signature, at the signature's indentation, and its closing brace too.

usage: check_function_length.py LIMIT DIR...
"""
import os
import re
import sys

SIGNATURE = re.compile(r'^(\s*)\S.*\)\s*(const)?\s*(override)?\s*(noexcept)?\s*$')
CONTROL = re.compile(r'^\s*(if|for|while|switch|else|do|catch)\b')


def long_functions(path, limit):
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = f.read().split('\n')
    for i in range(len(lines) - 1):
        m = SIGNATURE.match(lines[i])
        if not m or CONTROL.match(lines[i]):
            continue
        indent = m.group(1)
        if lines[i + 1] != indent + '{':
            continue
        for j in range(i + 2, len(lines)):
            line = lines[j]
            if line.startswith(indent + '}') and (len(line) == len(indent) + 1 or line[len(indent) + 1] in ';, '):
                if j - i + 1 > limit:
                    yield i + 1, j - i + 1, lines[i].strip()
                break


def main():
    limit = int(sys.argv[1])
    found = []
    for top in sys.argv[2:]:
        for root, _, files in os.walk(top):
            for name in sorted(files):
                if name.endswith(('.cpp', '.h')):
                    path = os.path.join(root, name)
                    found += [(path, *hit) for hit in long_functions(path, limit)]
    for path, line, length, signature in found:
        print(f'{path}:{line}: {length} lines (limit {limit}): {signature[:100]}')
    if found:
        print(f'{len(found)} function(s) over {limit} lines: split them')
        return 1
    print(f'no function over {limit} lines')
    return 0


if __name__ == '__main__':
    sys.exit(main())
