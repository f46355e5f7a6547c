// The test page's wiring of MCPHost: three app blocks of one task, each its
// own asset (the same fixture app), with a different link to open. Every
// host event is recorded in window.hostEvents for the test to read; a
// confirmation is recorded and declined (the test opens no window).
window.hostEvents = [];
window.confirmAsked = [];
var host = MCPHost.create({
  assetURL: function (id) { return "/assets/" + id; },
  ownOrigins: [window.location.origin],
  confirmLink: function (url) {
    window.confirmAsked.push(url);
    return Promise.resolve(false);
  },
  onMessage: function (text) { document.getElementById("composer").value = text; },
  onEvent: function (name, detail) {
    window.hostEvents.push({ name: name, asset: detail.block.asset_id, url: detail.url, reason: detail.reason, height: detail.height });
  },
});
var blocks = [
  { asset_id: "ast_01JAPPA0000000000000000000", title: "App A", fallback: "Open on the web to run App A.",
    tool_input: { link: "http://127.0.0.1/" },
    tool_result: { content: [{ type: "text", text: "14:32 +07:00" }], structured_content: { hour: 14 } } },
  { asset_id: "ast_01JAPPB0000000000000000000", title: "App B", fallback: "Open on the web to run App B.",
    tool_input: { link: "https://example.com/docs" },
    tool_result: { content: [{ type: "text", text: "result B" }] } },
  { asset_id: "ast_01JAPPC0000000000000000000", title: "App C", fallback: "Open on the web to run App C.",
    tool_result: { content: [{ type: "text", text: "result C" }] } },
];
var container = document.getElementById("blocks");
blocks.forEach(function (b) { host.mount(container, b); });
