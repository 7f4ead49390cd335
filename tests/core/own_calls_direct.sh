#!/bin/sh
# The library calls its own functions directly, not through the PLT (src/ops/CMakeLists.txt,
# -Bsymbolic-functions; issue 35: a new process's first call of each such function was a lazy symbol
# lookup, ~20 us of a cache hit). Fails when a PLT slot (JUMP_SLOT relocation) names a function the
# library itself defines, and lists them. Skips (77) without readelf.
#   own_calls_direct.sh LIBRARY
lib=$1
command -v readelf > /dev/null 2>&1 || { echo "skipped: readelf is not installed"; exit 77; }
[ -f "$lib" ] || { echo "no library at '$lib'"; exit 1; }
tmp=${TMPDIR:-/tmp}/own_calls_direct.$$
trap 'rm -f "$tmp".slots "$tmp".defined' EXIT
readelf -rW "$lib" | awk '$3 ~ /JUMP_SLOT/ {print $5}' | sort -u > "$tmp".slots
readelf -sW --dyn-syms "$lib" | awk '$7 != "UND" && ($4 == "FUNC" || $4 == "IFUNC") {print $8}' | sort -u > "$tmp".defined
slots=$(wc -l < "$tmp".slots)
defined=$(wc -l < "$tmp".defined)
[ "$defined" -gt 0 ] || { echo "readelf listed no function that $lib defines"; exit 1; }
own=$(comm -12 "$tmp".slots "$tmp".defined | wc -l)
echo "$lib: $slots PLT slots, $defined functions defined, $own slots naming one of them"
if [ "$own" -ne 0 ]; then
  echo "the library calls these of its own functions through the PLT (first 10):"
  comm -12 "$tmp".slots "$tmp".defined | head -10
  exit 1
fi
