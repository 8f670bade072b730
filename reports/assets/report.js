// ioadvisor report: sortable tables, finding filters, copy buttons. The page reads fine without it.
(function () {
  "use strict";

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "copy-buffer";
      document.body.appendChild(area);
      area.select();
      var ok = document.execCommand("copy");
      document.body.removeChild(area);
      if (ok) { resolve(); } else { reject(new Error("copy refused")); }
    });
  }

  function setupCopy(button) {
    var target = document.getElementById(button.getAttribute("data-target"));
    if (!target) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      copyText(target.textContent).then(function () {
        button.textContent = "Copied";
        button.setAttribute("data-copied", target.textContent);
      }, function () {
        button.textContent = "Select and copy";
      });
      window.setTimeout(function () { button.textContent = "Copy"; }, 1600);
    });
  }

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) { return numeric ? -Infinity : ""; }
    var raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent.trim();
    if (!numeric) { return raw.toLowerCase(); }
    var value = parseFloat(raw);
    return isNaN(value) ? -Infinity : value;
  }

  function setupSort(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, index) {
      th.classList.add("sortable-th");
      th.tabIndex = 0;
      var sort = function () {
        var numeric = th.getAttribute("data-type") === "num";
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
          var order = x < y ? -1 : x > y ? 1 : 0;
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
      });
    });
  }

  function setupFilters(job) {
    var bar = job.querySelector(".filters");
    if (!bar) { return; }
    bar.hidden = false;
    var boxes = bar.querySelectorAll(".sev-filter");
    var search = bar.querySelector(".text-filter");
    var apply = function () {
      var shown = {};
      Array.prototype.forEach.call(boxes, function (b) { shown[b.value] = b.checked; });
      var words = search.value.toLowerCase().trim();
      job.querySelectorAll("[data-severity]").forEach(function (el) {
        var text = el.textContent.toLowerCase();
        var visible = shown[el.getAttribute("data-severity")] && (!words || text.indexOf(words) !== -1);
        el.hidden = !visible;
      });
    };
    Array.prototype.forEach.call(boxes, function (b) { b.addEventListener("change", apply); });
    search.addEventListener("input", apply);
  }

  // Printing shows every detail (data tables, not-checked lists) and restores them after.
  var opened = [];
  window.addEventListener("beforeprint", function () {
    opened = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) { return !d.open; });
    opened.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; });
    opened = [];
  });

  document.querySelectorAll("button.copy").forEach(setupCopy);
  document.querySelectorAll("table.sortable").forEach(setupSort);
  document.querySelectorAll("section.job").forEach(setupFilters);
})();
