#!/usr/bin/env bash
# Loads popper's HTML report in headless Chromium and fails on what a reader
# would trip over.
#
#   scripts/report-check.sh --page FILE        check one page (e.g. reports/index.html)
#   scripts/report-check.sh POPPER WORKDIR     self-test: a page built from tests/corpus/report
#                                              (hostile strings, every outcome) and a git history
#                                              of two baseline versions must pass; four broken
#                                              pages (a script error, a missing section, an
#                                              external image, an input's markup left
#                                              unescaped) must each be rejected
#
# A page fails when: Chromium logs any console message (the report logs
# nothing, so any message is an error, an uncaught exception or injected
# markup that ran); a section id is missing from the DOM after load; the page
# references anything outside itself (src/href/url() to http(s):, //, file:);
# or Chromium cannot load it. Exit 0 pass, 1 fail, 77 chromium missing.
set -uo pipefail

CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
SECTIONS=(summary coverage mutants claims bench history)

check_page() {  # FILE [extra DOM pattern that must NOT appear]...
  local page="$1"; shift
  local work; work="$(mktemp -d)"
  local why=()
  if ! timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile" \
      --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom "file://$(realpath "$page")" \
      > "$work/dom.html" 2> "$work/log.txt"; then
    why+=("chromium failed on the page (exit $?)")
  fi
  # Chromium prints every console message (log, warn, error, uncaught exception) as "CONSOLE".
  local console; console="$(grep -a 'CONSOLE' "$work/log.txt" | sed 's/^\[[^]]*\] //' | head -5)"
  [ -n "$console" ] && why+=("console output: $console")
  grep -q '</html>' "$work/dom.html" || why+=("no DOM after load")
  for s in "${SECTIONS[@]}"; do
    grep -q "<section id=\"$s\"" "$work/dom.html" || why+=("section #$s missing")
  done
  local external
  external="$(grep -aoiE "(src|href)=[\"']?(https?:|//|file:)[^\"' >]*|url\\([\"']?(https?:|//|file:)[^)]*" "$page" | head -3)"
  [ -n "$external" ] && why+=("references outside the page: $external")
  for pattern in "$@"; do
    grep -qF "$pattern" "$work/dom.html" && why+=("markup from an input reached the DOM unescaped: $pattern")
  done
  rm -rf "$work"
  if [ ${#why[@]} -gt 0 ]; then
    printf 'report-check: %s: FAIL\n' "$page"
    printf '  - %s\n' "${why[@]}"
    return 1
  fi
  printf 'report-check: %s: ok (%s sections, no console output, nothing external)\n' "$page" "${#SECTIONS[@]}"
}

if [ -z "$CHROMIUM" ]; then
  echo "report-check: skipped: chromium not found (Debian package chromium; scripts/install-deps.sh installs it)"
  exit 77
fi

if [ "${1:-}" = "--page" ]; then
  [ -f "${2:-}" ] || { echo "report-check: no page '${2:-}'" >&2; exit 1; }
  check_page "$2"
  exit $?
fi

[ $# -eq 2 ] || { echo "usage: $0 --page FILE | $0 POPPER WORKDIR" >&2; exit 2; }
popper="$1"; work="$2"
src="$(cd "$(dirname "$0")/.." && pwd)"
rm -rf "$work" && mkdir -p "$work/reports" "$work/repo/baselines/gate-fixture" || exit 1
cp "$src/tests/corpus/report/coverage.json" "$src/tests/corpus/report/bench-arrow.csv" "$work/reports/"

# A history: two commits of one gate baseline.
gate_csv="$(ls "$src"/baselines/gate-*/arrow-gate.csv | head -1)"
(
  cd "$work/repo" && git init -q && git config user.email check@popper && git config user.name report-check &&
  cp "$gate_csv" baselines/gate-fixture/arrow-gate.csv && git add -A && git commit -qm first &&
  sed -i '1s/^# commit: .*/# commit: second/' baselines/gate-fixture/arrow-gate.csv && git commit -qam second
) || { echo "report-check: could not build the fixture git history" >&2; exit 1; }

"$popper" report html --reports "$work/reports" --baselines "$work/repo/baselines" -o "$work/index.html" || exit 1
fail=0
check_page "$work/index.html" '<script>console.log("injected' '<img src="x"' || fail=1
for sha in $(git -C "$work/repo" log --format=%h); do
  grep -q "$sha" "$work/index.html" || { echo "report-check: the history does not show commit $sha"; fail=1; }
done
grep -q 'span class="b warn">skipped' "$work/index.html" || { echo "report-check: the skipped id is not shown as skipped"; fail=1; }
grep -q 'span class="b bad">unbound' "$work/index.html" || { echo "report-check: the UNBOUND id is not shown as unbound"; fail=1; }

# The check must be able to fail: each broken page is rejected.
sed 's#<script>#<script>undefinedFunction();#' "$work/index.html" > "$work/broken-script.html"
sed 's#<section id="history">#<section id="histories">#' "$work/index.html" > "$work/broken-section.html"
sed 's#<h1>popper report</h1>#<h1>popper report</h1><img src="https://example.invalid/logo.png">#' "$work/index.html" \
  > "$work/broken-external.html"
sed 's#&lt;script&gt;#<script>#g; s#&lt;/script&gt;#</script>#g' "$work/index.html" > "$work/broken-unescaped.html"
for broken in broken-script broken-section broken-external broken-unescaped; do
  if check_page "$work/$broken.html" > "$work/$broken.log"; then
    echo "report-check: $broken.html was NOT rejected: the check cannot fail"; fail=1
  else
    echo "report-check: $broken.html rejected as it must be: $(grep -m1 '  - ' "$work/$broken.log" | cut -c1-160)"
  fi
done
[ $fail -eq 0 ] && echo "report-check: self-test PASS"
exit $fail
