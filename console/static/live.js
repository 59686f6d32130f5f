// The live strip: the /console/events stream (the API's event stream,
// authenticated by the session cookie). EventSource reconnects by itself
// and sends Last-Event-ID, so the stream resumes where it stopped; the last
// id is also kept for the tab, so the next page resumes from it too.
(function () {
  "use strict";
  var list = document.getElementById("live-events");
  var status = document.getElementById("live-status");
  if (!list || !status || !window.EventSource) {
    return;
  }
  var labels = {
    "charge.paid": "Cobrança paga",
    "charge.refunded": "Cobrança estornada",
    "divergence.opened": "Divergência aberta",
    "webhook_endpoint.disabled": "Webhook desativado por falhas"
  };
  var key = "razao.console.lastEventId";
  var after = "";
  try { after = sessionStorage.getItem(key) || ""; } catch (e) { after = ""; }
  var source = null;
  // connect opens the stream after the cursor given (none: from the
  // oldest event the outbox still holds in full).
  function connect(cursor) {
    var url = "/console/events" + (cursor ? "?after=" + encodeURIComponent(cursor) : "");
    source = new EventSource(url);
    source.onopen = function () { status.textContent = "Conectado."; };
    source.onerror = function () {
      // CLOSED: the server refused the stream (EventSource reconnects by
      // itself after anything else). A cursor behind what retention
      // archived is refused with 410 (events.ErrCursorExpired), and
      // would be at every reconnection: start again without it, once,
      // and say that older events are in the archive.
      if (source.readyState === EventSource.CLOSED && cursor) {
        try { sessionStorage.removeItem(key); } catch (e) { /* private mode */ }
        status.textContent = "Eventos anteriores foram arquivados; retomando dos mais antigos mantidos.";
        connect("");
        return;
      }
      status.textContent = source.readyState === EventSource.CLOSED ? "Desconectado." : "Reconectando…";
    };
    Object.keys(labels).forEach(function (topic) { source.addEventListener(topic, show(topic)); });
  }
  // Leaving the page ends its stream at once, rather than when the server
  // next writes to it: a token has only so many streams (events.Hub).
  window.addEventListener("pagehide", function () { if (source) { source.close(); } });
  function show(topic) {
    return function (ev) {
      try { sessionStorage.setItem(key, ev.lastEventId); } catch (e) { /* private mode: resume within the page only */ }
      var data = {};
      try { data = JSON.parse(ev.data); } catch (e) { data = {}; }
      var item = document.createElement("li");
      item.className = "event";
      item.setAttribute("data-topic", topic);
      // In the ledger's zone (the list's data-time-zone), as every page's times, not the browser's.
      var when = data.created_at ? new Date(data.created_at).toLocaleTimeString("pt-BR", { timeZone: list.getAttribute("data-time-zone") || undefined }) : "";
      // textContent, never innerHTML: a charge id is the selling app's text.
      var about = data.charge_id || (data.payload && data.payload.endpoint_id ? "endpoint #" + data.payload.endpoint_id : "");
      item.textContent = when + " · " + labels[topic] + (about ? " · " + about : "");
      list.insertBefore(item, list.firstChild);
      while (list.children.length > 50) {
        list.removeChild(list.lastChild);
      }
    };
  }
  connect(after);
}());
