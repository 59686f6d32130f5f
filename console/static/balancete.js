// The balancete's groups: each parent account's button shows or hides the
// rows under it (a WAI-ARIA disclosure: a real button, so Tab, Enter and
// Space work, with aria-expanded saying its state). Without this script
// every row is shown and the buttons stay hidden.
(function () {
  "use strict";
  var table = document.getElementById("balancete");
  if (!table) {
    return;
  }
  var buttons = table.querySelectorAll("button.toggle");
  var rows = table.querySelectorAll("tbody tr");
  // A row is hidden when any group it is in (data-in) is closed.
  function apply() {
    var closed = {};
    buttons.forEach(function (b) {
      if (b.getAttribute("aria-expanded") !== "true") {
        closed[b.closest("tr").id] = true;
      }
    });
    rows.forEach(function (r) {
      var groups = (r.getAttribute("data-in") || "").split(" ");
      r.hidden = groups.some(function (id) { return closed[id] === true; });
    });
  }
  buttons.forEach(function (b) {
    b.hidden = false;
    b.addEventListener("click", function () {
      b.setAttribute("aria-expanded", b.getAttribute("aria-expanded") === "true" ? "false" : "true");
      apply();
    });
  });
  apply();
}());
