// The statement upload's progress: the form is sent by XHR, whose upload
// progress events fill the progress bar, and the browser then goes to the
// run's page the server redirected to. Without this script the form posts
// as any form does and the server redirects the same way.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  var bar = document.getElementById("upload-progress");
  var label = document.getElementById("upload-progress-label");
  var status = document.getElementById("upload-status");
  var file = document.getElementById("upload-file");
  var endpoint = document.getElementById("upload-endpoint");
  if (!form || !bar || !status || !file || !window.FormData || !window.XMLHttpRequest) {
    return;
  }
  var sending = false;

  function say(text, problem) {
    status.textContent = text;
    status.className = problem ? "problem" : "";
  }

  // maxBytes is what the chosen endpoint takes.
  function maxBytes() {
    var opt = endpoint && endpoint.options[endpoint.selectedIndex];
    var n = parseInt(opt ? opt.getAttribute("data-max-bytes") : form.getAttribute("data-max-bytes"), 10);
    return isNaN(n) ? 0 : n;
  }

  // size writes n bytes as the server's messages do: 256 MiB, 4 KiB.
  function size(n) {
    if (n >= 1048576) { return Math.floor(n / 1048576) + " MiB"; }
    if (n >= 1024) { return Math.floor(n / 1024) + " KiB"; }
    return n + " bytes";
  }

  // problemOf is the message of the console's error page in html.
  function problemOf(html) {
    try {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var p = doc.querySelector(".problem");
      if (p && p.textContent) {
        return p.textContent;
      }
    } catch (e) { /* fall through */ }
    return "";
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (sending) {
      return; // one upload at a time: a double click sends once
    }
    var f = file.files && file.files[0];
    if (!f) {
      say("Escolha o arquivo CSV do extrato.", true);
      return;
    }
    var max = maxBytes();
    if (max > 0 && f.size > max) {
      say("Arquivo grande demais: este endpoint recebe extratos de até " + size(max) + " (o arquivo tem " + size(f.size) + ").", true);
      return;
    }
    sending = true;
    var button = form.querySelector("button[type=submit]");
    if (button) { button.disabled = true; }
    bar.hidden = false;
    if (label) { label.hidden = false; }
    bar.value = 0;
    say("Enviando " + f.name + "…", false);
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable && e.total > 0) {
        var pct = Math.floor(100 * e.loaded / e.total);
        bar.value = pct;
        say("Enviando " + f.name + ": " + pct + "%", false);
      }
    });
    xhr.upload.addEventListener("load", function () {
      bar.value = 100;
      say("Arquivo enviado; conciliando…", false);
    });
    function done(text) {
      sending = false;
      if (button) { button.disabled = false; }
      say(text, true);
    }
    xhr.addEventListener("load", function () {
      // The server redirects to the run's page, which XHR followed.
      if (xhr.status === 200 && xhr.responseURL && xhr.responseURL.indexOf("/console/reconciliation/") > 0) {
        window.location.assign(xhr.responseURL);
        return;
      }
      done(problemOf(xhr.responseText) || ("O envio falhou (" + xhr.status + ")."));
    });
    xhr.addEventListener("error", function () { done("O envio falhou: a conexão caiu. Tente de novo."); });
    xhr.addEventListener("abort", function () { done("Envio cancelado."); });
    xhr.send(new FormData(form));
  });
})();
