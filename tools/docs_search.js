/* Search for the Fluxion docs site that works where the README opens it: from file://.
 *
 * mkdocs' own search fetches search_index.json from a Web Worker, which browsers refuse for
 * file:// pages. tools/mkdocs_hooks.py writes the same index as search/search_index.js (a script
 * that sets window.fluxionSearchDocs) and installs this file as search/main.js, so the index loads
 * with a plain <script> tag, online or off. Ranking: a section whose title is the query comes
 * first, then titles starting with it, then titles containing every term, then the number of
 * occurrences in the text. `rank` is exported for node so the docs test can check the order.
 */
(function () {
  "use strict";

  function norm(s) {
    return (s || "").toLowerCase();
  }

  function terms(query) {
    return norm(query).split(/[\s\-]+/).filter(function (t) { return t.length > 0; });
  }

  function occurrences(text, term) {
    var n = 0, at = text.indexOf(term);
    while (at >= 0 && n < 20) {
      n += 1;
      at = text.indexOf(term, at + term.length);
    }
    return n;
  }

  function rank(docs, query) {
    var ts = terms(query), q = ts.join(" "), found = [];
    if (!ts.length) {
      return [];
    }
    for (var i = 0; i < docs.length; i++) {
      var d = docs[i], title = norm(d.title), text = norm(d.text), score = 0, every = true;
      for (var k = 0; k < ts.length; k++) {
        var inTitle = title.indexOf(ts[k]) >= 0, n = occurrences(text, ts[k]);
        if (!inTitle && !n) {
          every = false;
          break;
        }
        score += (inTitle ? 100 : 0) + n;
      }
      if (!every) {
        continue;
      }
      var bare = title.replace(/[`()]/g, "").trim();
      var last = bare.split(".").pop();
      if (bare === q || last === q) {
        score += 100000;
      } else if (bare.indexOf(q) === 0 || last.indexOf(q) === 0) {
        score += 10000;
      } else if (bare.indexOf(q) >= 0) {
        score += 1000;
      }
      found.push({doc: d, score: score, order: i});
    }
    found.sort(function (a, b) { return b.score - a.score || a.order - b.order; });
    return found.slice(0, 50).map(function (f) { return f.doc; });
  }

  if (typeof module !== "undefined" && module.exports) {
    module.exports = {rank: rank};
  }
  if (typeof document === "undefined") {
    return;
  }

  function escapeHtml(value) {
    return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;")
      .replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function joinUrl(base, path) {
    return base.replace(/\/$/, "") + "/" + path;
  }

  function excerpt(text, query) {
    var t = terms(query)[0] || "", at = norm(text).indexOf(t);
    var start = Math.max(0, at - 60);
    return (start > 0 ? "... " : "") + text.substr(start, 200) + (text.length > start + 200 ? " ..." : "");
  }

  function show(query) {
    var box = document.getElementById("mkdocs-search-results");
    if (!box) {
      return;
    }
    var docs = window.fluxionSearchDocs || [];
    var results = query.length >= 2 ? rank(docs, query) : [];
    var html = results.map(function (d) {
      return '<article><h3><a href="' + joinUrl(base_url, d.location) + '">' + escapeHtml(d.title) +
        "</a></h3><p>" + escapeHtml(excerpt(d.text, query)) + "</p></article>";
    }).join("");
    box.innerHTML = html || (query.length >= 2 ? "<p>" + (box.getAttribute("data-no-results-text") ||
      "No results found") + "</p>" : "");
  }

  function init() {
    var input = document.getElementById("mkdocs-search-query");
    if (input) {
      input.addEventListener("keyup", function () { show(input.value); });
      var m = /[?&]q=([^&]*)/.exec(window.location.search);
      if (m) {
        input.value = decodeURIComponent(m[1].replace(/\+/g, "%20"));
        show(input.value);
      }
    }
  }

  var script = document.createElement("script");
  script.src = joinUrl(base_url, "search/search_index.js");
  script.onload = init;
  document.head.appendChild(script);
})();
