
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
