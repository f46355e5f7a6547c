// The binding page's "try an op" form: choosing an op replaces the payload
// with that op's example, unless the admin has edited the payload since the
// last example was put there (their text is never thrown away).
(function () {
  "use strict";
  var op = document.getElementById("try-op");
  var payload = document.getElementById("try-payload");
  if (!op || !payload) return;
  function example() {
    var opt = op.options[op.selectedIndex];
    return opt ? opt.getAttribute("data-example") || "{}" : "{}";
  }
  var shown = example();
  op.addEventListener("change", function () {
    var text = payload.value.trim();
    if (text !== "" && text !== "{}" && payload.value !== shown) return;
    shown = example();
    payload.value = shown;
    payload.rows = Math.min(Math.max(shown.split("\n").length + 1, 4), 24);
  });
})();
