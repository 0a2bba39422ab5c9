#!/usr/bin/env bash
# Every library a bundle packs carries its license: the check bundle.sh runs on
# what it is about to pack and bundle-check.sh on the unpacked bundle.
#   scripts/bundle-licenses-check.sh BUNDLE_DIR
# BUNDLE_DIR (popper-bundle/) must hold popper's LICENSE and THIRD_PARTY.md,
# and licenses/INDEX, one line per packed library, written by bundle.sh:
#   <library, relative to BUNDLE_DIR>  <its license file, relative to BUNDLE_DIR>  <origin ...>
# ('#' starts a comment; a line whose library is "compiled-in" names code built
# into the programs.) Every shared library under lib/ and bin/ (*.so, *.so.*)
# must have a line, and every license file a line names must be there and not
# empty. Exit 0 when so, else 1, each offending library named on its own line.
set -uo pipefail
dir="${1:?usage: bundle-licenses-check.sh BUNDLE_DIR}"
index="$dir/licenses/INDEX"
fail=0
bad() { echo "bundle-licenses: FAIL: $*"; fail=1; }

for f in LICENSE THIRD_PARTY.md; do
  [ -s "$dir/$f" ] || bad "popper's own $f is missing from the bundle"
done
declare -A license_of=()
if [ -s "$index" ]; then
  while read -r lib license _; do
    case "$lib" in '' | '#'*) continue ;; esac
    [ -n "$license" ] || { bad "licenses/INDEX: '$lib' names no license file"; continue; }
    [ "$lib" = compiled-in ] || license_of["$lib"]="$license"
    [ -s "$dir/$license" ] || bad "$lib: its license file $license is missing or empty"
  done <"$index"
else
  bad "licenses/INDEX is missing or empty: no packed library can be matched to its license"
fi

libs=0
while IFS= read -r -d '' f; do
  rel="${f#"$dir"/}"
  libs=$((libs + 1))
  [ -n "${license_of[$rel]:-}" ] || bad "$rel: packed without a license (no line in licenses/INDEX)"
done < <(find "$dir/lib" "$dir/bin" \( -type f -o -type l \) \( -name '*.so' -o -name '*.so.*' \) -print0 2>/dev/null | sort -z)

if [ "$fail" -eq 0 ]; then
  echo "bundle-licenses: $libs libraries, each with its license ($(find "$dir/licenses" -type f ! -name INDEX | wc -l) license files, licenses/INDEX)"
fi
exit "$fail"
