#!/usr/bin/env bash
# Loads popper's HTML report (popper report html) in headless Chromium and fails
# on what a reader would trip over.
#
#   scripts/report-check.sh --page FILE      check one page (CI: reports/index.html)
#   scripts/report-check.sh POPPER WORKDIR   self-test: POPPER builds pages from
#       tests/corpus/report (every outcome, hostile strings) and a git history of
#       baseline CSVs made in WORKDIR; they must pass; inputs that are missing or
#       malformed must give a page that says so or exit 2 without a file; the
#       bench chart, also as a standalone SVG, must pass; and nine broken pages
#       (two of them broken charts) must each be rejected for their own fault.
#   --page also checks the bench-*.svg files beside the page.
#
# A page fails when
#   - Chromium logs any console message: the report logs nothing, so any message
#     is an error, an uncaught exception or markup from an input that ran. Chromium
#     (--enable-logging=stderr --v=0) prints each as "[...:INFO:CONSOLE:<line>] "<text>",
#     source: <url> (<line>)" (older versions: "CONSOLE(<line>)"); matched by ':CONSOLE[:(]';
#   - Chromium exits non-zero or times out, or --dump-dom gives no document;
#   - a section id (#summary #coverage #mutants #claims #bench #history) is missing
#     from the DOM after load;
#   - any tag of the page, as written or after its scripts ran, references anything
#     but itself: a src/href/srcset/action/data/poster/... value not starting with
#     '#' or 'data:', a CSS url() likewise, or @import;
#   - the page requested anything over the network: Chromium's net log
#     (--log-net-log) lists each request with the page's network isolation key
#     (file://...); host resolution is disabled (--host-resolver-rules), so nothing
#     leaves the machine;
#   - in the self-test, markup from an input reached the DOM as markup;
#   - a chart of the page (each <svg>), or a bench-*.svg beside it, has a <text>
#     whose box reaches outside the SVG's canvas, or two value labels (<text
#     class="value">, the bars' figures) whose boxes intersect: each SVG is put
#     alone on a page with an inline script that measures every <text>'s
#     getBoundingClientRect() in Chromium (real fonts, transforms applied) and
#     writes its findings into <pre id="geometry">, read back from --dump-dom.
# Before any page, a probe page that logs one console message must be caught, so
# a Chromium that stopped reporting console messages fails the check instead of
# passing everything.
# Exit 0 pass, 1 fail, 2 usage, 77 chromium missing (ctest: skipped).
set -uo pipefail

CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
SECTIONS=(summary coverage mutants claims bench history)
REF_ATTRS='src|href|srcset|action|formaction|data|poster|background|xlink:href|ping|manifest|cite|longdesc|codebase|archive|lowsrc|icon'

# load PAGE DIR: Chromium loads PAGE; DIR gets dom.html, chromium.log, netlog.json. Returns its exit code.
load() {
  local page="$1" dir="$2"
  rm -rf "$dir" && mkdir -p "$dir"
  timeout -k 5 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
    --disable-background-networking --disable-component-update --disable-sync --disable-extensions \
    --disable-default-apps --user-data-dir="$dir/profile" --host-resolver-rules='MAP * ~NOTFOUND' \
    --log-net-log="$dir/netlog.json" --enable-logging=stderr --v=0 --virtual-time-budget=5000 \
    --dump-dom "file://$(realpath "$page")" > "$dir/dom.html" 2> "$dir/chromium.log"
}

console_lines() { grep -aE ':CONSOLE[:(]' "$1" | sed -E 's/^\[[^]]*\] ?//' | cut -c1-200; }

# Every reference in FILE's tags and style to something other than the page itself.
outside_refs() {
  grep -aoE '<[a-zA-Z][^>]*>' "$1" |
    grep -aoiE "(^|[[:space:]\"'/])($REF_ATTRS)[[:space:]]*=[[:space:]]*(\"[^\"]*\"|'[^']*'|[^[:space:]>]+)" |
    sed -E "s/^[[:space:]\"'\\/]//" | grep -aviE "=[[:space:]]*[\"']?(#|data:)" | sort -u | head -5
  # CSS: the style elements and the tags' style attributes.
  { perl -0777 -ne 'print "$1\n" while /<style[^>]*>(.*?)<\/style>/gis' "$1"; grep -aoE '<[a-zA-Z][^>]*>' "$1"; } |
    grep -aoiE "url\\([[:space:]]*[\"']?[^)\"'[:space:]]*|@import[^;]*" | grep -aviE "url\\([[:space:]]*[\"']?(#|data:)" |
    sort -u | head -5
}

# The script of a geometry page (the charts of one page, each alone in its
# <div>): one line per fault ("outside: ..." or "overlap: ..."), then
# "measured: N charts, N texts, M value labels", so a page whose script did not
# run has no such line and fails. A box may pass the canvas or meet another by
# half a pixel (anti-aliasing, rounding), no more.
GEOMETRY_JS='
const out = [], slack = 0.5;
const show = (b) => "[" + [b.left, b.top, b.right, b.bottom].map((v) => v.toFixed(1)).join(", ") + "]";
const what = (t) => JSON.stringify(t.textContent.slice(0, 60));
const charts = [...document.querySelectorAll("svg")].filter((svg) => !svg.parentElement.closest("svg"));
let texts = 0, labels = 0;
charts.forEach((svg, k) => {
  const chart = "chart " + (k + 1) + ": ", canvas = svg.getBoundingClientRect();
  const boxes = [...svg.querySelectorAll("text")].map((t) => [t, t.getBoundingClientRect()])
    .filter(([, b]) => b.width > 0 || b.height > 0);
  for (const [t, b] of boxes)
    if (b.left < canvas.left - slack || b.top < canvas.top - slack || b.right > canvas.right + slack ||
        b.bottom > canvas.bottom + slack)
      out.push("outside: " + chart + what(t) + " at " + show(b) + ", canvas " + show(canvas));
  const values = boxes.filter(([t]) => t.classList.contains("value"));
  for (let i = 0; i < values.length; ++i)
    for (let j = i + 1; j < values.length; ++j) {
      const [s, a] = values[i], [t, b] = values[j];
      const across = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const down = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (across > slack && down > slack)
        out.push("overlap: " + chart + what(s) + " at " + show(a) + " and " + what(t) + " at " + show(b));
    }
  texts += boxes.length;
  labels += values.length;
});
out.push("measured: " + charts.length + " charts, " + texts + " texts, " + labels + " value labels");
document.getElementById("geometry").textContent = out.join("\n");
'

# chart_geometry FILE DIR: prints one line per fault of the text geometry (see
# GEOMETRY_JS) of every <svg>...</svg> in FILE (a page or a standalone SVG),
# nothing when there is none; the findings go to DIR/geometry.txt.
chart_geometry() {
  local file="$1" dir="$2"
  mkdir -p "$dir"
  { printf '<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}</style></head><body>\n'
    perl -0777 -ne 'print "<div>$1</div>\n" while /(<svg\b.*?<\/svg>)/gs' "$file"  # the charts are not nested
    printf '<pre id="geometry"></pre><script>%s</script></body></html>\n' "$GEOMETRY_JS"; } > "$dir/geometry.html"
  load "$dir/geometry.html" "$dir/load" || { echo "chromium failed on the geometry page of $file"; return; }
  perl -0777 -ne 'print $1 if /<pre id="geometry">(.*?)<\/pre>/s' "$dir/load/dom.html" |
    sed 's/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&amp;/\&/g' > "$dir/geometry.txt"
  grep -q '^measured: ' "$dir/geometry.txt" || echo "the geometry script did not run on the charts of $file (no 'measured:' line)"
  grep -E '^(outside|overlap): ' "$dir/geometry.txt" | head -5 |
    sed -E 's#^outside: #chart text outside its canvas: #; s#^overlap: #value labels overlap: #'
  console_lines "$dir/load/chromium.log" | head -2 | sed 's/^/console output on the geometry page: /'
}

# check_page PAGE DIR [MARKUP...]: prints ok or FAIL with one line per fault; returns 0 or 1.
# MARKUP: strings that must not appear in the DOM (an input's markup that was not escaped).
check_page() {
  local page="$1" dir="$2"; shift 2
  local why=() rc
  load "$page" "$dir"; rc=$?
  [ $rc -eq 0 ] || why+=("chromium failed on the page (exit $rc$([ $rc -eq 124 ] && echo ', timed out'))")
  local console; console="$(console_lines "$dir/chromium.log" | head -5)"
  [ -n "$console" ] && why+=("console output: $(echo "$console" | paste -sd '|')")
  grep -aq '</html>' "$dir/dom.html" || why+=("no document after load (--dump-dom)")
  for s in "${SECTIONS[@]}"; do
    grep -aqE "<section[^>]* id=\"$s\"" "$dir/dom.html" || why+=("section #$s missing")
  done
  local refs; refs="$( (outside_refs "$page"; outside_refs "$dir/dom.html") | sort -u | head -5)"
  [ -n "$refs" ] && why+=("references outside the page: $(echo "$refs" | paste -sd ' ')")
  if [ ! -s "$dir/netlog.json" ]; then
    why+=("no network log from chromium (--log-net-log): cannot tell whether the page requested anything")
  else
    local req; req="$(grep -a '"network_isolation_key":"file://' "$dir/netlog.json" | grep -aoE '"url":"[^"]*"' | sort -u | head -3)"
    [ -n "$req" ] && why+=("the page requested over the network: $(echo "$req" | paste -sd ' ')")
  fi
  for m in "$@"; do
    grep -aqF -- "$m" "$dir/dom.html" && why+=("markup from an input reached the DOM unescaped: $m")
  done
  local fault
  while IFS= read -r fault; do why+=("$fault"); done < <(chart_geometry "$page" "$dir/geometry")
  if [ ${#why[@]} -gt 0 ]; then
    printf 'report-check: %s: FAIL\n' "$page"
    printf '  - %s\n' "${why[@]}"
    return 1
  fi
  printf 'report-check: %s: ok (%s sections, no console output, nothing outside the page, no request, charts: text inside, value labels apart; %s)\n' \
    "$page" "${#SECTIONS[@]}" "$(grep '^measured: ' "$dir/geometry/geometry.txt")"
}

# check_svg SVG DIR: a standalone chart (reports/bench-<family>.svg): its text geometry. Returns 0 or 1.
check_svg() {
  local faults; faults="$(chart_geometry "$1" "$2")"
  if [ -n "$faults" ]; then
    printf 'report-check: %s: FAIL\n' "$1"
    printf '%s\n' "$faults" | sed 's/^/  - /'
    return 1
  fi
  printf 'report-check: %s: ok (%s)\n' "$1" "$(grep '^measured: ' "$2/geometry.txt")"
}

# The probe: a console message must be seen, else this Chromium cannot be checked with.
probe() {
  local dir="$1"
  mkdir -p "$dir"
  printf '<!DOCTYPE html><html><body><script>console.log("report-check-probe")</script></body></html>\n' > "$dir/probe.html"
  load "$dir/probe.html" "$dir/probe"
  if ! console_lines "$dir/probe/chromium.log" | grep -q 'report-check-probe'; then
    echo "report-check: FAIL: $CHROMIUM did not report a console message of a probe page on stderr (looked for ':CONSOLE[:(]'" \
         "in $dir/probe/chromium.log), so console errors could not be caught"
    return 1
  fi
}

if [ -z "$CHROMIUM" ] || ! command -v "$CHROMIUM" > /dev/null; then
  echo "report-check: skipped: chromium not found${CHROMIUM:+ at $CHROMIUM} (Debian package chromium;" \
       "scripts/install-deps.sh installs it)"
  exit 77
fi

if [ "${1:-}" = "--page" ]; then
  [ $# -eq 2 ] || { echo "usage: $0 --page FILE | $0 POPPER WORKDIR" >&2; exit 2; }
  [ -f "$2" ] || { echo "report-check: no page '$2' (make report writes reports/index.html)" >&2; exit 1; }
  tmp="$(mktemp -d)"
  probe "$tmp" && check_page "$2" "$tmp/page"; rc=$?
  # The standalone charts beside the page (popper bench compare writes them).
  if [ $rc -ne 1 ]; then
    for svg in "$(dirname "$2")"/bench-*.svg; do
      [ -e "$svg" ] || continue
      check_svg "$svg" "$tmp/$(basename "$svg" .svg)" || rc=1
    done
  fi
  rm -rf "$tmp"
  exit $rc
fi

[ $# -eq 2 ] || { echo "usage: $0 --page FILE | $0 POPPER WORKDIR" >&2; exit 2; }
popper="$(realpath "$1")"; work="$2"
src="$(cd "$(dirname "$0")/.." && pwd)"
corpus="$src/tests/corpus/report"
rm -rf "$work" && mkdir -p "$work" && work="$(realpath "$work")" || exit 2
fail=0
bad() { echo "report-check: $*"; fail=1; }
probe "$work" || exit 1

# ---- the fixture page: every outcome, hostile strings, a history of three commits ----
mkdir -p "$work/reports" && cp "$corpus/coverage.json" "$corpus/bench-arrow.csv" "$work/reports/"
(
  set -e
  repo="$work/repo"
  mkdir -p "$repo/baselines/gate-fixture-a" "$repo/baselines/fixture-machine"
  cd "$repo"
  git init -q . && git config user.email report-check@popper.invalid && git config user.name report-check &&
    git config commit.gpgsign false
  cp "$corpus/arrow-gate.csv" baselines/gate-fixture-a/arrow-gate.csv
  cp "$corpus/bench-arrow.csv" baselines/fixture-machine/arrow.csv  # a timed baseline
  git add -A && git commit -qm "first baselines"
  sed -i 's/498527\.25/473600.5/g' baselines/gate-fixture-a/arrow-gate.csv  # the hand kernel got 5% cheaper
  git commit -qam "arrow faster"
  git mv baselines/gate-fixture-a baselines/gate-fixture-b                    # a new gate key ...
  sed -i 's/1012345\.5/1063000.25/g' baselines/gate-fixture-b/arrow-gate.csv  # ... and a 5% dearer row
  git commit -qam "new gate key"
) > "$work/git.log" 2>&1 || { echo "report-check: could not build the fixture git history:"; cat "$work/git.log"; exit 1; }

"$popper" report html --reports "$work/reports" --baselines "$work/repo/baselines" -o "$work/index.html" || exit 1
page="$work/index.html"
check_page "$page" "$work/load-fixture" \
  '<script>console.log("injected' '<img src="x"' '<img src=x' '<b>bold?</b>' '<i>down</i>' || fail=1
# The chart's geometry was measured: the bench chart's value labels were there to compare.
grep -qE '^measured: [1-9][0-9]* charts, [1-9][0-9]* texts, [1-9][0-9]* value labels' "$work/load-fixture/geometry/geometry.txt" ||
  bad "the fixture page's charts were not measured, or had no value labels: $(cat "$work/load-fixture/geometry/geometry.txt")"
# The bench chart as popper bench compare writes it, a standalone SVG, passes too.
perl -0777 -ne 'print $1 if /<div class="chart">(<svg\b.*?<\/svg>)/s' "$page" > "$work/bench-arrow.svg"
[ -s "$work/bench-arrow.svg" ] || bad "no bench chart on the fixture page"
check_svg "$work/bench-arrow.svg" "$work/load-bench-svg" || fail=1
# The hostile strings are on the page, as text.
grep -qF '&lt;script&gt;console.log("injected-marker")&lt;/script&gt; &amp;' "$work/load-fixture/dom.html" ||
  bad "the failure reason with <script> and & is not shown as text"
grep -qF 'AMD EPYC &lt;script&gt;console.log("injected-bench")' "$work/load-fixture/dom.html" ||
  bad "the bench table's metadata with <script> is not shown as text"
# Every outcome shown as itself; none of the four problem ids shown as passed.
for b in 'b bad">failed<' 'b bad">UNBOUND<' 'b warn">skipped<' 'b warn">not run<' 'b warn">declined<' 'b bad">survived<' \
         'b bad">not_met<' 'b warn">not_measured<' 'b bad">not covered<' 'b bad">FAIL<'; do
  grep -qF "class=\"$b" "$page" || bad "no '$b' badge on the fixture page"
done
grep -qE '<tr class="id pass"><td>FALSIFY-ACC-00[1-4]<' "$page" && bad "a failed, UNBOUND, skipped or not-run id is marked as passed"
grep -qF '<th>falsification tests UNBOUND</th><td>1/15</td>' "$page" || bad "the summary lacks 'falsification tests UNBOUND 1/15'"
grep -qF '<th>mutants killed (power)</th><td>21/29</td>' "$page" || bad "the summary lacks 'mutants killed 21/29'"
grep -qF 'hand ÷ best ceiling' "$page" && grep -qF 'hand % of peak' "$page" && grep -q '<svg' "$page" ||
  bad "the bench section lacks its table or chart"
# The history: every commit, the key change, a line per hand row, the timed baseline.
for sha in $(git -C "$work/repo" log --format=%h --abbrev=7); do
  grep -qF "<code>$sha</code>" "$page" || bad "the history does not show commit $sha"
done
grep -qF 'key changed' "$page" || bad "the history does not mark the gate key change"
[ "$(sed -n '/<section id="history">/,$p' "$page" | grep -o 'class="trend"' | wc -l)" -ge 4 ] ||
  bad "the history has fewer trend lines than hand rows (2 gate + 2 timed expected)"
grep -qF '<b>arrow</b> — timed baselines' "$page" || bad "the timed baseline is not in the history"

# ---- missing inputs: a page that says what is missing; no git: no history, said so ----
mkdir -p "$work/empty-reports" "$work/nogit/baselines"
cp "$corpus/arrow-gate.csv" "$work/nogit/baselines/"
GIT_CEILING_DIRECTORIES="$work" "$popper" report html --reports "$work/empty-reports" --baselines "$work/nogit/baselines" \
  -o "$work/empty.html" > "$work/empty.out" 2>&1 || bad "popper report html failed on missing inputs: $(cat "$work/empty.out")"
for said in 'No audit results' 'make audit' 'No bench tables' 'make bench-compare' 'No history'; do
  grep -qF "$said" "$work/empty.html" 2>/dev/null || bad "the page of missing inputs does not say '$said'"
done
[ -f "$work/empty.html" ] && { check_page "$work/empty.html" "$work/load-empty" || fail=1; }

# ---- malformed inputs: exit 2 naming the file, no page written ----
mkdir -p "$work/bad-json" "$work/bad-csv"
printf '{"contracts": [' > "$work/bad-json/coverage.json"
grep -v '^# end rows' "$corpus/bench-arrow.csv" > "$work/bad-csv/bench-arrow.csv"  # truncated: no trailer
for d in bad-json:coverage.json bad-csv:bench-arrow.csv; do
  dir="${d%%:*}" file="${d#*:}"
  "$popper" report html --reports "$work/$dir" --baselines "$work/nogit/baselines" -o "$work/$dir/index.html" \
    > "$work/$dir.out" 2>&1; rc=$?
  [ $rc -eq 2 ] || bad "a malformed $file gave exit $rc, not 2"
  grep -qF "$file" "$work/$dir.out" || bad "the error for a malformed $file does not name it: $(cat "$work/$dir.out")"
  [ -e "$work/$dir/index.html" ] && bad "a malformed $file still wrote a page"
  echo "report-check: malformed $file rejected: $(head -c 200 "$work/$dir.out")"
done

# ---- the check must be able to fail: each broken page is rejected for its own fault ----
mk() { sed "$2" "$page" > "$work/$1.html"; }
mk broken-script   's#<script>#<script>undefinedFunction();#'
mk broken-section  's#<section id="history">#<section id="histories">#'
mk broken-external 's#<h1>popper report</h1>#<h1>popper report</h1><img src="https://example.invalid/logo.png">#'
mk broken-relative 's#<h1>popper report</h1>#<h1>popper report</h1><img src="logo.png">#'
mk broken-css      's#</style>#body{background:url(https://example.invalid/bg.png)}</style>#'
mk broken-request  "s#<script>#<script>new Image().src = 'https:' + '//example.invalid/pixel.png';#"
mk broken-unescaped 's#&lt;script&gt;#<script>#g; s#&lt;/script&gt;#</script>#g; s#&quot;#"#g'
# The bench chart's two old faults: a title centred on a point near the left edge
# (it started off the canvas), and value labels lying flat with five-character
# figures (114.5 over bars 18 px apart: they overlapped).
mk broken-chart-title 's#<text x="10" y="24" font-size="16"#<text x="10" y="24" text-anchor="middle" font-size="16"#'
mk broken-chart-labels 's#\(class="value"[^>]*\) rotate(-90)\("[^>]*>\)[^<]*<#\1\2114.5<#g'
for spec in 'broken-script:console output:' 'broken-section:section #history missing' \
            'broken-external:references outside the page:' 'broken-relative:references outside the page:' \
            'broken-css:references outside the page:' 'broken-request:the page requested over the network:' \
            'broken-unescaped:markup from an input reached the DOM' \
            'broken-chart-title:chart text outside its canvas:' 'broken-chart-labels:value labels overlap:'; do
  name="${spec%%:*}" expect="${spec#*:}"
  if check_page "$work/$name.html" "$work/load-$name" '<script>console.log("injected' > "$work/$name.log"; then
    bad "$name.html was NOT rejected: the check cannot fail"
  elif ! grep -qF -- "  - $expect" "$work/$name.log"; then
    bad "$name.html was rejected, but not for '$expect': $(grep '  - ' "$work/$name.log" | paste -sd ' ')"
  elif [[ $name == broken-chart-* ]] && grep -vF -- "  - $expect" "$work/$name.log" | grep -q '^  - '; then
    # A chart fixture changes one thing of the chart: any other fault is the check's own.
    bad "$name.html was rejected for more than its own fault: $(grep '  - ' "$work/$name.log" | grep -vF -- "$expect" | paste -sd ' ')"
  else
    echo "report-check: $name.html rejected as it must be: $(grep -F -- "  - $expect" "$work/$name.log" | head -1 | cut -c5-200)"
  fi
done

[ $fail -eq 0 ] && echo "report-check: self-test PASS" || echo "report-check: self-test FAIL"
exit $fail
