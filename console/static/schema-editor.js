// schema-editor.js: the configured tool form's JSON Schema editor. Each
// textarea.schema-editor gets, beside it, a line saying whether what is
// typed meets the API's rules for the field (valid JSON, an object, known
// types, for an app tool no required key the worker injects), updated as
// the admin types, and a Format button that indents it. The server checks
// the same rules on save and names the field it refuses: this only says it
// sooner. Loaded as a file, so the console's CSP (script-src 'self') holds.
"use strict";

const schemaTypes = ["null", "boolean", "object", "array", "number", "string", "integer"];

// schemaProblem returns what breaks the API's rules in text, "" if nothing
// the browser can see.
function schemaProblem(field, text, injected) {
  if (text.trim() === "") return "";
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return field + " is not valid JSON: " + e.message;
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
    return field + " must be a JSON object";
  }
  const problems = [];
  const walk = (node, at) => {
    if (node === null || typeof node !== "object") return;
    if (Array.isArray(node)) {
      node.forEach((v, i) => walk(v, at + "/" + i));
      return;
    }
    if ("type" in node) {
      const types = Array.isArray(node.type) ? node.type : [node.type];
      for (const t of types) {
        if (typeof t !== "string" || !schemaTypes.includes(t)) {
          problems.push("at " + (at || "/") + ": type " + JSON.stringify(t) + " must be one of " + schemaTypes.join(", "));
        }
      }
    }
    if ("$ref" in node && typeof node.$ref === "string" && !node.$ref.startsWith("#")) {
      problems.push("at " + (at || "/") + ": $ref " + node.$ref + " points outside the schema; only references within it are allowed");
    }
    for (const [k, v] of Object.entries(node)) {
      if (k !== "enum" && k !== "const" && k !== "default" && k !== "examples") walk(v, at + "/" + k);
    }
  };
  walk(doc, "");
  if (Array.isArray(doc.required)) {
    for (const k of doc.required) {
      if (injected.includes(k)) {
        problems.push(field + " requires " + k + ", which the worker injects and a caller may never send: remove it from required");
      }
    }
  }
  return problems.length ? field + " is not a valid JSON Schema: " + problems.join("; ") : "";
}

for (const area of document.querySelectorAll("textarea.schema-editor")) {
  const field = area.name;
  const injected = (area.dataset.injected || "").split(",").filter(Boolean);
  const status = document.createElement("p");
  status.className = "schema-status";
  status.setAttribute("role", "status");
  status.dataset.field = field;
  const format = document.createElement("button");
  format.type = "button";
  format.className = "schema-format";
  format.textContent = "Format";
  const label = area.closest("label") || area;
  label.after(status);
  status.before(format);
  const check = () => {
    const problem = schemaProblem(field, area.value, injected);
    status.textContent = problem || (area.value.trim() === "" ? "empty: the default schema (an object of any properties) applies" : "meets the rules the API checks here");
    status.classList.toggle("error-message", problem !== "");
    status.classList.toggle("schema-ok", problem === "");
    area.setAttribute("aria-invalid", problem === "" ? "false" : "true");
    format.disabled = problem.includes("is not valid JSON") || area.value.trim() === "";
  };
  format.addEventListener("click", () => {
    try {
      area.value = JSON.stringify(JSON.parse(area.value), null, 2);
    } catch (_) {
      return;
    }
    check();
  });
  area.addEventListener("input", check);
  check();
}
