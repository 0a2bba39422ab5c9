#!/usr/bin/env bash
# The bundle's license check can fail (ctest bundle_licenses_check): on a fake
# unpacked bundle, two libraries with their licenses pass; a license file
# removed, or a library left out of licenses/INDEX, fails naming that library.
#   tests/bundle_licenses_test.sh SCRIPTS_DIR
set -uo pipefail
check="${1:?usage: bundle_licenses_test.sh SCRIPTS_DIR}/bundle-licenses-check.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
b="$work/popper-bundle"
mkdir -p "$b/lib/ggml/cpu" "$b/licenses" "$b/bin"
echo "ELF, not really" >"$b/lib/libfoo.so.1"
echo "ELF, not really" >"$b/lib/ggml/cpu/libbar.so"
echo "an executable, not a library: needs no line" >"$b/bin/popper"
echo "Apache License 2.0" >"$b/LICENSE"
echo "# Third-party software" >"$b/THIRD_PARTY.md"
echo "foo's license" >"$b/licenses/libfoo1.copyright"
echo "bar's license" >"$b/licenses/bar.LICENSE"
cat >"$b/licenses/INDEX" <<'EOF'
# library  license  origin
lib/libfoo.so.1  licenses/libfoo1.copyright  debian:libfoo1 1.0-1
lib/ggml/cpu/libbar.so  licenses/bar.LICENSE  bar 2.0
EOF

fail=0
expect() {  # expect PASS|FAIL WHAT [TEXT the output must contain]
  local want="$1" what="$2" text="${3:-}" out rc
  out="$("$check" "$b" 2>&1)"
  rc=$?
  if { [ "$want" = PASS ] && [ "$rc" -ne 0 ]; } || { [ "$want" = FAIL ] && [ "$rc" -ne 1 ]; }; then
    echo "bundle_licenses_test: $what: expected $want, exit $rc:"
    echo "$out" | sed 's/^/  /'
    fail=1
  elif [ -n "$text" ] && ! grep -qF -- "$text" <<<"$out"; then
    echo "bundle_licenses_test: $what: the output does not name '$text':"
    echo "$out" | sed 's/^/  /'
    fail=1
  else
    echo "bundle_licenses_test: $what: $want as expected ($(tail -1 <<<"$out"))"
  fi
}

expect PASS "every library with its license"
rm "$b/licenses/bar.LICENSE"
expect FAIL "bar's license file removed" "lib/ggml/cpu/libbar.so: its license file licenses/bar.LICENSE is missing"
echo "bar's license" >"$b/licenses/bar.LICENSE"
expect PASS "bar's license file back"
sed -i '/libfoo/d' "$b/licenses/INDEX"
expect FAIL "libfoo left out of the index" "lib/libfoo.so.1: packed without a license"
echo "lib/libfoo.so.1  licenses/libfoo1.copyright  debian:libfoo1 1.0-1" >>"$b/licenses/INDEX"
rm "$b/THIRD_PARTY.md"
expect FAIL "THIRD_PARTY.md missing" "THIRD_PARTY.md is missing"
exit "$fail"
