"""The HTML report's inline style and script (hashed into its Content-Security-Policy)."""

__all__ = ["CSS", "JS"]

CSS = """
:root{--ok:#1a7f37;--fail:#cf222e;--review:#bf8700;--error:#d4700a;--timeout:#8250df;
--crash:#82071e;--not_run:#8c959f;--ink:#1f2328;--mute:#59636e;--line:#d1d9e0;--bg:#f6f8fa}
*{box-sizing:border-box}[hidden]{display:none!important}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;
color:var(--ink);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:24px;margin:0 0 2px}h2{font-size:18px;margin:32px 0 10px}
.sub{color:var(--mute);margin:0 0 18px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(200px,1fr));gap:12px}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 14px}
.card h3{margin:0 0 4px;font-size:12px;text-transform:uppercase;letter-spacing:.04em;
color:var(--mute)}
.big{font-size:28px;font-weight:600;font-variant-numeric:tabular-nums}
.card p{margin:2px 0;color:var(--mute)}.card b{color:var(--ink)}
.panel{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 14px}
table{border-collapse:collapse;width:100%;background:#fff;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#eef1f4;font-weight:600}td.num,th.num{text-align:right}
.badge{display:inline-block;padding:0 8px;border-radius:10px;color:#fff;font-size:12px;
font-weight:600;line-height:20px;white-space:nowrap}
.v-pass{background:var(--ok)}.v-fail{background:var(--fail)}.v-needs_review{background:var(--review)}
.controls{display:flex;gap:8px;flex-wrap:wrap;align-items:center;margin-bottom:10px}
button{font:inherit;border:1px solid var(--line);background:#fff;border-radius:6px;
padding:3px 10px;cursor:pointer}button[aria-pressed=true]{background:var(--ink);color:#fff}
input[type=search]{font:inherit;padding:3px 8px;border:1px solid var(--line);border-radius:6px;
min-width:240px}
details.sample{background:#fff;border:1px solid var(--line);border-radius:8px;margin:6px 0}
details.sample>summary{cursor:pointer;padding:7px 12px;display:flex;gap:10px;align-items:center}
details.sample>summary .id{font-weight:600;font-family:ui-monospace,monospace;
overflow-wrap:anywhere}
details.sample>summary .fn{color:var(--mute)}
details.sample>summary .why{color:var(--mute);flex:1;min-width:0;white-space:nowrap;
overflow:hidden;text-overflow:ellipsis}
.body{padding:4px 14px 14px;border-top:1px solid var(--line);display:grid;
grid-template-columns:minmax(0,1fr) minmax(0,1.2fr);gap:0 28px}
@media (max-width:900px){.body{grid-template-columns:minmax(0,1fr)}}
.mini{display:flex;gap:1px;flex:none}.mini i{width:7px;height:14px;border-radius:1px}
.mini b{font-size:11px;color:var(--mute);font-weight:400;margin-left:3px}
svg.chart{width:100%;height:auto;max-width:1100px}
.body h4{margin:12px 0 4px;font-size:13px}
.cases{display:flex;flex-wrap:wrap;gap:3px}
.case{min-width:26px;height:22px;padding:0 4px;border-radius:4px;color:#fff;font-size:11px;
text-align:center;line-height:22px;font-variant-numeric:tabular-nums}
.o-ok{background:var(--ok)}.o-wrong{background:var(--fail)}.o-error{background:var(--error)}
.o-timeout{background:var(--timeout)}.o-crash{background:var(--crash)}
.o-not_run{background:var(--not_run)}
.legend{display:flex;gap:12px;flex-wrap:wrap;color:var(--mute);font-size:12px;margin:4px 0}
.legend .case{min-width:14px;height:14px;line-height:14px;display:inline-block;
vertical-align:-2px;margin-right:4px}
.kv{color:var(--mute)}.kv b{color:var(--ink);font-weight:600}
pre{background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:6px 0;margin:4px 0;
overflow-x:auto;font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre span{display:block;padding:0 10px;white-space:pre}pre span.hit{background:#fff3cd}
pre i{display:inline-block;width:3.2em;color:var(--mute);font-style:normal;user-select:none}
.sev-high{color:var(--fail);font-weight:600}.sev-medium{color:var(--error);font-weight:600}
.note{color:var(--mute);font-style:italic}
svg text{font:12px system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;fill:#1f2328}
svg .tick{fill:#59636e;font-size:11px}footer{margin-top:32px;color:var(--mute);font-size:12px}
"""

JS = """
(function () {
  "use strict";
  var samples = Array.prototype.slice.call(document.querySelectorAll("details.sample"));
  var buttons = Array.prototype.slice.call(document.querySelectorAll("button[data-filter]"));
  var box = document.getElementById("q");
  var shown = document.getElementById("shown");
  var verdict = "all";
  function apply() {
    var query = box.value.trim().toLowerCase();
    var n = 0;
    samples.forEach(function (s) {
      var ok = (verdict === "all" || s.getAttribute("data-verdict") === verdict) &&
        (query === "" || s.getAttribute("data-search").indexOf(query) !== -1);
      s.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = String(n);
  }
  buttons.forEach(function (b) {
    b.addEventListener("click", function () {
      verdict = b.getAttribute("data-filter");
      buttons.forEach(function (o) { o.setAttribute("aria-pressed", String(o === b)); });
      apply();
    });
  });
  box.addEventListener("input", apply);
  Array.prototype.slice.call(document.querySelectorAll("[data-task]")).forEach(function (a) {
    a.addEventListener("click", function () {
      box.value = a.getAttribute("data-task").toLowerCase();
      apply();
    });
  });
  document.getElementById("expand").addEventListener("click", function () {
    var open = samples.some(function (s) { return !s.hidden && !s.open; });
    samples.forEach(function (s) { if (!s.hidden) { s.open = open; } });
  });
  apply();
  document.documentElement.setAttribute("data-ready", "1");
}());
"""
