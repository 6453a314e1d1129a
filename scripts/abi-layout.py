#!/usr/bin/env python3
"""Compares the struct layouts two ELF objects were compiled with.

    abi-layout.py BUILT REFERENCE

Reads the DWARF of both files (readelf --debug-dump=info) and, for every
named struct or union that both describe, compares its size and the name
and offset of each member.  Prints one line per difference and exits 1
when there is one, 2 when a file has no DWARF layouts at all, 0 otherwise.

scripts/build-rdma-core.sh runs it on the provider (BUILT, compiled in the
rdma-core 56.1 tree) against a probe compiled from the guest's own
libibverbs-dev headers (REFERENCE): a struct that the provider shares with
the guest's libibverbs and its programs must have one layout in both
(docs/rdma-provider.md, "Consistency").
"""
import re
import subprocess
import sys

DIE = re.compile(r'^\s*<(\d+)><[0-9a-f]+>: Abbrev Number: \d+(?: \((DW_TAG_\w+)\))?')
ATTR = re.compile(r'^\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s*(.*)$')
TYPES = ('DW_TAG_structure_type', 'DW_TAG_union_type')


def attr_value(raw):
    """The value readelf prints, without the form and string-offset notes
    before it: '(strp) (offset: 0x57a): ibv_qp_ex' -> 'ibv_qp_ex'."""
    raw = re.sub(r'^\((?:\w+)\)\s*', '', raw.strip())
    raw = re.sub(r'^\((?:indirect (?:line )?string, )?offset: 0x[0-9a-f]+\):\s*', '', raw)
    return raw.strip()


def layouts(path):
    """{name: (size, ((member, offset), ...))} for the complete named
    structs and unions of path; a name with two layouts maps to None."""
    out = subprocess.run(['readelf', '--wide', '--debug-dump=info', path],
                         check=True, capture_output=True, text=True).stdout
    result = {}
    stack = []          # (depth, tag, attrs, members)

    def close(depth):
        while stack and stack[-1][0] >= depth:
            d, tag, attrs, members = stack.pop()
            if tag == 'member':
                if stack and stack[-1][1] in TYPES:
                    name = attrs.get('DW_AT_name', '?')
                    off = attrs.get('DW_AT_data_member_location',
                                    'bit' + attrs.get('DW_AT_data_bit_offset', '?'))
                    stack[-1][3].append((name, off))
                continue
            if tag not in TYPES or 'DW_AT_name' not in attrs or \
                    'DW_AT_declaration' in attrs or 'DW_AT_byte_size' not in attrs:
                continue
            key = ('union ' if tag == 'DW_TAG_union_type' else 'struct ') + attrs['DW_AT_name']
            lay = (attrs['DW_AT_byte_size'], tuple(members))
            if key in result and result[key] != lay:
                result[key] = None
            else:
                result.setdefault(key, lay)

    for line in out.splitlines():
        m = DIE.match(line)
        if m:
            depth = int(m.group(1))
            close(depth)
            tag = m.group(2) or ''
            stack.append((depth, 'member' if tag == 'DW_TAG_member' else tag, {}, []))
            continue
        m = ATTR.match(line)
        if m and stack:
            stack[-1][2][m.group(1)] = attr_value(m.group(2))
    close(0)
    return result


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    built, ref = layouts(sys.argv[1]), layouts(sys.argv[2])
    for path, lay in ((sys.argv[1], built), (sys.argv[2], ref)):
        if not lay:
            print(f'{path}: no struct layouts in its DWARF (built without -g?)')
            return 2
    common = sorted(set(built) & set(ref))
    bad = 0
    for name in common:
        a, b = built[name], ref[name]
        if a is None or b is None:
            print(f'{name}: two different layouts inside one file')
            bad += 1
        elif a != b:
            diff = [f'{x[0]}@{x[1]}' for x in a[1] if x not in b[1]]
            print(f'{name}: size {a[0]} vs {b[0]}; members that differ: '
                  f'{" ".join(diff) or "(order)"}')
            bad += 1
    print(f'{len(common)} structs and unions compared, {bad} differ')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
