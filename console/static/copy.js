// copy.js: a button.copy puts its data-copy text (a full id) on the
// clipboard and says so for a moment. Loaded as a file, with no inline
// handler, so the console's CSP (script-src 'self') holds.
"use strict";

// copyByCommand copies text through a hidden textarea where the async
// clipboard API is unavailable (a page served over plain http from
// another host than localhost is not a secure context).
function copyByCommand(text) {
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "copy-buffer";
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch (_) {
    ok = false;
  }
  area.remove();
  return ok;
}

document.addEventListener("click", (ev) => {
  const button = ev.target instanceof Element ? ev.target.closest("button.copy") : null;
  if (!button) return;
  const text = button.dataset.copy || "";
  const said = (word) => {
    button.textContent = word;
    setTimeout(() => { button.textContent = "copy"; }, 1500);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => said("copied"), () => said(copyByCommand(text) ? "copied" : "select it"));
  } else {
    said(copyByCommand(text) ? "copied" : "select it");
  }
});
