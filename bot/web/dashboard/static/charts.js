/* Draws each [data-chart] box of the page with uPlot from the JSON the server embedded beside it:
   the series' points, its change points (a line where the level changed, red for a regression,
   green for an improvement, with the level before and after drawn as steps) and the flagged
   merges as markers along the bottom; and each [data-rounds-chart] box, a comparison's rounds. A
   click on a history chart opens what is under the cursor: a flagged merge's marker its merge page,
   a point its merge's page where a flagged merge made that commit, else the commit on GitHub (the
   server sends each point's link). A chart in a folded <details> is fitted to the page when it is
   opened. The drawn charts are listed in window.perfbotCharts. */
(function () {
  "use strict";
  var LEVEL_COLOURS = { high: "#c62828", medium: "#ef6c00", low: "#9e9d24", none: "#78909c" };
  var charts = [];
  window.perfbotCharts = charts;

  function levels(data) {
    var out = new Array(data.y.length);
    if (!data.changes.length) { return out; }
    var level = data.changes[0].before;
    var next = 0;
    for (var i = 0; i < data.y.length; i++) {
      while (next < data.changes.length && i >= data.changes[next].i) { level = data.changes[next].after; next++; }
      out[i] = level;
    }
    return out;
  }

  function decorate(data) {
    return function (u) {
      var ctx = u.ctx;
      var top = u.bbox.top, height = u.bbox.height, bottom = top + height;
      ctx.save();
      data.changes.forEach(function (c) {
        var x = u.valToPos(data.x[c.i], "x", true);
        ctx.strokeStyle = c.direction === "regression" ? "#c62828" : "#2e7d32";
        ctx.lineWidth = 2 * devicePixelRatio;
        ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
        ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, bottom); ctx.stroke();
      });
      ctx.setLineDash([]);
      var size = 5 * devicePixelRatio;
      data.merges.forEach(function (m) {
        var x = u.valToPos(m.t, "x", true);
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) { return; }
        ctx.fillStyle = LEVEL_COLOURS[m.level] || "#78909c";
        ctx.beginPath(); ctx.moveTo(x, bottom - size * 1.6); ctx.lineTo(x - size, bottom); ctx.lineTo(x + size, bottom);
        ctx.closePath(); ctx.fill();
      });
      if (data.marker !== null) {
        var mx = u.valToPos(data.marker, "x", true);
        ctx.strokeStyle = "#1565c0"; ctx.lineWidth = 2 * devicePixelRatio;
        ctx.beginPath(); ctx.moveTo(mx, top); ctx.lineTo(mx, bottom); ctx.stroke();
      }
      ctx.restore();
    };
  }

  // A merge marker within a few pixels of the cursor wins; else the nearest point's link.
  function linkAt(u, data) {
    var left = u.cursor.left;
    if (left == null || left < 0) { return null; }
    for (var k = 0; k < data.merges.length; k++) {
      if (Math.abs(u.valToPos(data.merges[k].t, "x") - left) <= 6) { return data.merges[k].url; }
    }
    var i = u.cursor.idx;
    return i == null ? null : data.links[i] || null;
  }

  function draw(box) {
    var data = JSON.parse(document.getElementById(box.dataset.chart).textContent);
    var width = Math.max(280, box.clientWidth);
    var opts = {
      width: width,
      height: width < 600 ? 220 : 320,
      series: [
        {},
        { label: data.unit, stroke: "#455a64", width: 1, points: { show: data.x.length <= 300, size: 4 } },
        { label: "level", stroke: "#c62828", width: 2, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } },
      ],
      axes: [{}, { label: data.unit, size: 60 }],
      legend: { live: true },
      hooks: { draw: [decorate(data)] },
    };
    var plot = new uPlot(opts, [data.x, data.y, levels(data)], box);
    plot.over.style.cursor = "pointer";
    plot.over.addEventListener("click", function () {
      var target = linkAt(plot, data);
      if (target) { window.location.assign(target); }
    });
    charts.push({ id: data.id, plot: plot, points: data.x.length, changes: data.changes, merges: data.merges.length,
                  linkAt: function (left) { plot.setCursor({ left: left, top: 10 }); return linkAt(plot, data); } });
    function fit() {
      var w = Math.max(280, box.clientWidth);
      plot.setSize({ width: w, height: w < 600 ? 220 : 320 });
    }
    window.addEventListener("resize", fit);
    refitWhenOpened(box, fit);
  }

  // A chart drawn in a closed <details> (the merge page folds all but the first) had no width:
  // it takes the page's once opened.
  function refitWhenOpened(box, fit) {
    var fold = box.closest("details");
    if (fold) { fold.addEventListener("toggle", function () { if (fold.open) { fit(); } }); }
  }

  /* A comparison's per-round chart: base and head of each round pair, in the order the pairs ran
     (the x-axis labels say which side ran first), head in its verdict's colour. */
  var VERDICT_COLOURS = { regression: "#c62828", improvement: "#2e7d32" };

  function drawRounds(box) {
    var data = JSON.parse(document.getElementById(box.dataset.roundsChart).textContent);
    var x = data.labels.map(function (_, i) { return i + 1; });
    var width = Math.max(280, box.clientWidth);
    var opts = {
      width: width,
      height: width < 600 ? 200 : 260,
      scales: { x: { time: false, range: [0.5, x.length + 0.5] } },
      series: [
        { label: "pair", value: function (u, v) { return v == null ? "--" : data.labels[v - 1] || ""; } },
        { label: "base", stroke: "#78909c", width: 2, points: { show: true, size: 7 } },
        { label: "head", stroke: VERDICT_COLOURS[data.verdict] || "#1565c0", width: 2, points: { show: true, size: 7 } },
      ],
      axes: [
        { label: "round pair", values: function (u, splits) {
            return splits.map(function (v) { return Number.isInteger(v) && data.labels[v - 1] ? data.labels[v - 1] : ""; });
          }, incrs: [1] },
        { label: data.unit, size: 60 },
      ],
      legend: { live: true },
    };
    var plot = new uPlot(opts, [x, data.base, data.head], box);
    charts.push({ id: data.id, plot: plot, points: x.length, kind: "rounds" });
    function fit() {
      var w = Math.max(280, box.clientWidth);
      plot.setSize({ width: w, height: w < 600 ? 200 : 260 });
    }
    window.addEventListener("resize", fit);
    refitWhenOpened(box, fit);
  }

  document.querySelectorAll("[data-chart]").forEach(draw);
  document.querySelectorAll("[data-rounds-chart]").forEach(drawRounds);
})();
