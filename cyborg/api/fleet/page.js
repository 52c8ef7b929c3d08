// The fleet page's script: fetch the fleet (this same URL, as JSON) every
// few seconds and draw it. Everything the server sends is written with
// textContent, never as HTML.
'use strict';

(function () {
  var TOKEN_KEY = 'cyborg-fleet-token';
  var params = new URLSearchParams(window.location.search);
  // ?refresh=<seconds> changes how often the page asks (at least 1 s).
  var REFRESH_MS = Math.max(1, Number(params.get('refresh')) || 3) * 1000;
  var STATE_ORDER = ['BindStarted', 'Bound', 'BindFailed', 'UnbindFailed',
                     'Initial', 'Unbound', 'Deleting'];
  var KIND_LABELS = {root: 'card', region: 'region', pf: 'PF', vf: 'VF',
                     vgpu_type: 'vGPU type', part: 'part'};
  // Deployables the user folded, by uuid; kept across refreshes.
  var folded = new Set();
  var timer = null;
  var refreshes = 0;
  // The hosts shown: ?host=<text> and ?limit=<hosts a page> in the page's
  // address set the first search and page size; ``markers`` holds where
  // each page before this one began (the server pages forward only).
  var view = {host: params.get('host') || '',
              limit: Math.max(1, Number(params.get('limit')) || 20),
              markers: [], marker: null, next: null};

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function short(uuid) {
    return uuid ? String(uuid).slice(0, 8) : '';
  }

  function token() {
    return window.sessionStorage.getItem(TOKEN_KEY);
  }

  function setStatus(state, text) {
    document.body.dataset.state = state;
    document.getElementById('status-text').textContent = text;
  }

  function showMessage(text) {
    var message = document.getElementById('message');
    message.textContent = text || '';
    message.hidden = !text;
  }

  function errorText(response, body) {
    // Cyborg's error body: error_message holds the fault as JSON text.
    try {
      return JSON.parse(JSON.parse(body).error_message).faultstring;
    } catch (error) {
      return response.status + ' ' + response.statusText;
    }
  }

  function usage(handles) {
    var box = element('span', 'usage');
    var ratio = handles.total ? handles.in_use / handles.total : 0;
    box.classList.add(ratio >= 1 ? 'full' : ratio > 0 ? 'busy' : 'free');
    var bar = element('span', 'meter');
    var fill = element('span', 'fill');
    fill.style.width = Math.round(ratio * 100) + '%';
    bar.appendChild(fill);
    box.appendChild(bar);
    box.appendChild(element('span', 'count',
      handles.in_use + ' / ' + handles.total + ' in use'));
    box.title = handles.type + ' attach handles';
    box.dataset.inUse = handles.in_use;
    box.dataset.total = handles.total;
    return box;
  }

  // "2026-12-07 09:00:08" of an API timestamp (UTC), or ''.
  function when(timestamp) {
    return timestamp ? String(timestamp).slice(0, 19).replace('T', ' ') : '';
  }

  // The tags of a device's or deployable's health (unless healthy) and
  // drain state (if drained or draining).
  function conditionTags(item) {
    var tags = [];
    if (item.health && item.health !== 'healthy') {
      var health = element('span', 'tag health ' + item.health, item.health);
      health.title = (item.health_reason || 'no reason given') +
        (item.health_since ? ' (since ' + when(item.health_since) + ' UTC)' : '');
      tags.push(health);
    }
    if (item.drain) {
      var drain = element('span', 'tag drain ' + item.drain, item.drain);
      drain.title = 'Drain asked ' + when(item.drain_since) + ' UTC' +
        (item.drain === 'draining' ? '; ARQs still hold it' : '; none holds it');
      tags.push(drain);
    }
    return tags;
  }

  // The newest history entries of a device, newest first.
  function historyList(entries) {
    var box = element('details', 'history');
    box.open = true;
    box.appendChild(element('summary', null, 'Recent history'));
    var list = element('ol', 'entries');
    entries.forEach(function (entry) {
      var row = element('li', 'entry outcome-' + entry.outcome);
      row.dataset.event = entry.event;
      row.dataset.outcome = entry.outcome;
      row.dataset.requestId = entry.request_id || '';
      row.appendChild(element('span', 'mono muted', when(entry.created_at)));
      row.appendChild(element('span', 'event', entry.event));
      row.appendChild(element('span', 'outcome', entry.outcome));
      var who = entry.user_id ? entry.user_id : (entry.agent ? 'agent ' + entry.agent : '');
      if (who) { row.appendChild(element('span', 'who', who)); }
      if (entry.arq_uuid) {
        row.appendChild(element('span', 'mono muted', 'ARQ ' + short(entry.arq_uuid)));
      }
      if (entry.image_id) {
        row.appendChild(element('span', 'mono muted', 'image ' + short(entry.image_id)));
      }
      if (entry.reason) { row.appendChild(element('span', 'why', entry.reason)); }
      row.title = [entry.request_id, entry.project_id && 'project ' + entry.project_id,
                   entry.deployable_uuid && 'deployable ' + entry.deployable_uuid]
        .filter(Boolean).join(' \u00b7 ');
      list.appendChild(row);
    });
    box.appendChild(list);
    return box;
  }

  function deployableNode(deployable) {
    var item = element('li', 'node kind-' + deployable.kind);
    item.dataset.uuid = deployable.uuid;
    item.dataset.kind = deployable.kind;
    item.dataset.name = deployable.name;
    item.dataset.health = deployable.health;
    item.dataset.drain = deployable.drain || '';
    var line = element('div', 'line');
    var hasChildren = deployable.children.length > 0;
    var toggle = element('button', 'toggle', hasChildren ?
      (folded.has(deployable.uuid) ? '\u25b8' : '\u25be') : '');
    toggle.type = 'button';
    toggle.disabled = !hasChildren;
    toggle.setAttribute('aria-label', 'Fold or unfold ' + deployable.name);
    toggle.addEventListener('click', function () {
      if (folded.has(deployable.uuid)) { folded.delete(deployable.uuid); }
      else { folded.add(deployable.uuid); }
      item.classList.toggle('folded');
      toggle.textContent = folded.has(deployable.uuid) ? '\u25b8' : '\u25be';
    });
    line.appendChild(toggle);
    line.appendChild(element('span', 'kind', KIND_LABELS[deployable.kind] ||
                             deployable.kind));
    line.appendChild(element('span', 'name', deployable.name));
    if (deployable.vgpu_type_name) {
      line.appendChild(element('span', 'detail', deployable.vgpu_type_name +
                               ' (' + deployable.vgpu_type + ')'));
    }
    if (deployable.pci_address) {
      line.appendChild(element('span', 'detail mono', deployable.pci_address));
    }
    if (deployable.resource_class) {
      line.appendChild(element('span', 'tag rc', deployable.resource_class));
    }
    if (deployable.function_id) {
      var loaded = element('span', 'tag loaded',
                           'function ' + short(deployable.function_id));
      loaded.title = 'Function loaded: ' + deployable.function_id;
      line.appendChild(loaded);
    }
    if (deployable.bitstream_id) {
      var bitstream = element('span', 'tag bitstream',
                              'bitstream ' + short(deployable.bitstream_id));
      bitstream.title = 'Programmed with Glance image ' + deployable.bitstream_id;
      line.appendChild(bitstream);
    }
    conditionTags(deployable).forEach(function (tag) {
      line.appendChild(tag);
    });
    if (deployable.attach_handles) {
      line.appendChild(usage(deployable.attach_handles));
    }
    deployable.arqs.forEach(function (uuid) {
      var chip = element('a', 'tag holder', 'ARQ ' + short(uuid));
      chip.href = '#arq-' + uuid;
      chip.title = 'Held by ARQ ' + uuid;
      line.appendChild(chip);
    });
    item.appendChild(line);
    if (hasChildren) {
      var children = element('ul', 'children');
      deployable.children.forEach(function (child) {
        children.appendChild(deployableNode(child));
      });
      item.appendChild(children);
      if (folded.has(deployable.uuid)) { item.classList.add('folded'); }
    }
    return item;
  }

  function deviceCard(device) {
    var card = element('article', 'device status-' + device.status);
    card.dataset.uuid = device.uuid;
    card.dataset.status = device.status;
    card.dataset.health = device.health;
    card.dataset.drain = device.drain || '';
    if (device.health && device.health !== 'healthy') {
      card.classList.add('health-' + device.health);
    }
    var head = element('header', 'device-head');
    head.appendChild(element('span', 'type type-' +
                             String(device.type).toLowerCase(), device.type));
    head.appendChild(element('span', 'model', device.model));
    head.appendChild(element('span', 'vendor mono', device.vendor));
    var uuid = element('span', 'uuid mono', short(device.uuid));
    uuid.title = device.uuid;
    head.appendChild(uuid);
    head.appendChild(element('span', 'pill ' + device.status,
      device.status === 'maintaining' ? 'maintenance' : device.status));
    conditionTags(device).forEach(function (tag) { head.appendChild(tag); });
    card.appendChild(head);
    if (device.status === 'maintaining') {
      card.appendChild(element('p', 'reason',
        'Disabled: ' + (device.status_reason || 'no reason given')));
    }
    if (device.health && device.health !== 'healthy') {
      card.appendChild(element('p', 'reason health-reason ' + device.health,
        device.health.charAt(0).toUpperCase() + device.health.slice(1) + ': ' +
        (device.health_reason || 'no reason given') +
        (device.health_since ? ' (since ' + when(device.health_since) + ' UTC)' : '')));
    }
    var tree = element('ul', 'tree');
    device.deployables.forEach(function (deployable) {
      tree.appendChild(deployableNode(deployable));
    });
    card.appendChild(tree);
    if (device.history && device.history.length) {
      card.appendChild(historyList(device.history));
    }
    return card;
  }

  function handleTotals(deployables) {
    var totals = {in_use: 0, total: 0};
    (function walk(nodes) {
      nodes.forEach(function (node) {
        if (node.attach_handles) {
          totals.in_use += node.attach_handles.in_use;
          totals.total += node.attach_handles.total;
        }
        walk(node.children);
      });
    })(deployables);
    return totals;
  }

  function drawHosts(hosts) {
    var container = document.getElementById('hosts');
    var fragment = document.createDocumentFragment();
    if (!hosts.length) {
      fragment.appendChild(element('p', 'empty',
        'No devices yet: no agent has reported an inventory.'));
    }
    hosts.forEach(function (host) {
      var section = element('section', 'host');
      section.dataset.hostname = host.hostname;
      var head = element('h2', 'host-head');
      head.appendChild(element('span', 'host-name', host.hostname));
      var all = [];
      host.devices.forEach(function (device) {
        all = all.concat(device.deployables);
      });
      var totals = handleTotals(all);
      head.appendChild(element('span', 'host-count',
        counted(host.devices.length, 'device', 'devices') + ' \u00b7 ' +
        totals.in_use + ' / ' +
        counted(totals.total, 'handle', 'handles') + ' in use'));
      section.appendChild(head);
      host.devices.forEach(function (device) {
        section.appendChild(deviceCard(device));
      });
      fragment.appendChild(section);
    });
    container.replaceChildren(fragment);
  }

  function drawArqs(byState) {
    var container = document.getElementById('arqs');
    var fragment = document.createDocumentFragment();
    var states = STATE_ORDER.filter(function (state) { return state in byState; })
      .concat(Object.keys(byState).filter(function (state) {
        return STATE_ORDER.indexOf(state) < 0;
      }));
    var shown = 0;
    states.forEach(function (state) {
      var arqs = byState[state];
      if (!arqs.length) { return; }
      shown += arqs.length;
      var group = element('section', 'arq-group state-' + state);
      group.dataset.state = state;
      var head = element('h3', null);
      head.appendChild(element('span', 'state', state));
      head.appendChild(element('span', 'arq-count', arqs.length));
      group.appendChild(head);
      var list = element('ul', 'arq-list');
      arqs.forEach(function (arq) {
        var row = element('li', 'arq');
        row.id = 'arq-' + arq.uuid;
        row.dataset.arqUuid = arq.uuid;
        row.dataset.state = arq.state;
        row.dataset.instance = arq.instance_uuid || '';
        var first = element('div', 'arq-line');
        var uuid = element('span', 'mono strong', short(arq.uuid));
        uuid.title = arq.uuid;
        first.appendChild(uuid);
        first.appendChild(element('span', 'profile', arq.device_profile_name));
        row.appendChild(first);
        var second = element('div', 'arq-line muted');
        var instance = element('span', 'mono',
          arq.instance_uuid ? 'instance ' + arq.instance_uuid : 'no instance');
        second.appendChild(instance);
        row.appendChild(second);
        if (arq.hostname || arq.deployable_name) {
          row.appendChild(element('div', 'arq-line muted',
            [arq.hostname, arq.deployable_name].filter(Boolean).join(' \u00b7 ')));
        }
        if (arq.state_reason) {
          row.appendChild(element('div', 'arq-line reason', arq.state_reason));
        }
        list.appendChild(row);
      });
      group.appendChild(list);
      fragment.appendChild(group);
    });
    if (!shown) {
      fragment.appendChild(element('p', 'empty', 'No accelerator requests.'));
    }
    container.replaceChildren(fragment);
  }

  // The word for ``count`` things: one host, 0 hosts, 2 hosts.
  function noun(count, one, many) {
    return count === 1 ? one : many;
  }

  function counted(count, one, many) {
    return count + ' ' + noun(count, one, many);
  }

  function drawSummary(summary) {
    var list = document.getElementById('summary');
    var bound = summary.arqs.Bound || 0;
    // [figure, words after it, whether it is a warning]
    var items = [
      [summary.hosts, noun(summary.hosts, 'host', 'hosts')],
      [summary.devices, noun(summary.devices, 'device', 'devices')],
      [summary.deployables,
       noun(summary.deployables, 'deployable', 'deployables')],
      [summary.attach_handles.in_use + ' / ' + summary.attach_handles.total,
       noun(summary.attach_handles.total, 'handle', 'handles') + ' in use'],
      [bound, 'bound ' + noun(bound, 'ARQ', 'ARQs')]
    ];
    if (summary.maintaining_devices) {
      items.push([summary.maintaining_devices, 'in maintenance', true]);
    }
    // Devices and deployables together, only when there are any.
    [['health', 'degraded'], ['health', 'failed'], ['drain', 'draining'],
     ['drain', 'drained']].forEach(function (pair) {
      var counts = summary[pair[0]];
      var count = counts ? counts.devices[pair[1]] + counts.deployables[pair[1]] : 0;
      if (count) { items.push([count, pair[1], true]); }
    });
    var fragment = document.createDocumentFragment();
    items.forEach(function (item) {
      var entry = element('li', item[2] ? 'warn' : null);
      entry.appendChild(element('strong', null, item[0]));
      entry.appendChild(element('span', null, ' ' + item[1]));
      fragment.appendChild(entry);
    });
    list.replaceChildren(fragment);
  }

  // Where the page is: "Page 2: hosts 21-40 of 10000 (name contains x)".
  function drawPage(page, summary) {
    view.next = page.next_marker;
    var first = view.markers.length * view.limit;
    var text = 'Page ' + (view.markers.length + 1) + ': ' +
      (page.hosts ? 'hosts ' + (first + 1) + '\u2013' + (first + page.hosts)
                  : 'no host') + ' of ' + counted(summary.hosts, 'host', 'hosts');
    if (page.host) { text += ', name containing \u201c' + page.host + '\u201d'; }
    document.getElementById('page-text').textContent = text;
    document.getElementById('page-next').disabled = !view.next;
    document.getElementById('page-prev').disabled = !view.markers.length;
    document.getElementById('page-first').disabled = !view.markers.length;
  }

  function fleetUrl() {
    var query = new URLSearchParams({limit: String(view.limit)});
    if (view.host) { query.set('host', view.host); }
    if (view.marker) { query.set('marker', view.marker); }
    return window.location.pathname + '?' + query.toString();
  }

  function goTo(marker, markers) {
    view.marker = marker;
    view.markers = markers;
    window.clearTimeout(timer);
    refresh();
  }

  function draw(fleet) {
    drawSummary(fleet.summary);
    drawPage(fleet.page, fleet.summary);
    drawHosts(fleet.hosts);
    drawArqs(fleet.arqs_by_state);
    refreshes += 1;
    document.body.dataset.refreshes = refreshes;
  }

  function refresh() {
    var headers = {'Accept': 'application/json'};
    if (token()) { headers['X-Auth-Token'] = token(); }
    return fetch(fleetUrl(), {headers: headers, cache: 'no-store',
                              credentials: 'omit'})
      .then(function (response) {
        return response.text().then(function (body) {
          if (!response.ok) {
            if (response.status === 401 || response.status === 403) {
              document.getElementById('token-form').hidden = false;
            }
            throw new Error(errorText(response, body));
          }
          return JSON.parse(body);
        });
      })
      .then(function (fleet) {
        draw(fleet);
        showMessage('');
        setStatus('ok', 'Updated ' + new Date().toLocaleTimeString());
      })
      .catch(function (error) {
        setStatus('error', 'Not updated');
        showMessage(error.message);
      })
      .finally(function () {
        // One timer, even when a token was given while a fetch was out.
        window.clearTimeout(timer);
        timer = window.setTimeout(refresh, REFRESH_MS);
      });
  }

  document.getElementById('token-button').addEventListener('click', function () {
    var form = document.getElementById('token-form');
    form.hidden = !form.hidden;
  });
  document.getElementById('token-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var input = document.getElementById('token-input');
    if (input.value.trim()) {
      window.sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    }
    input.value = '';
    document.getElementById('token-form').hidden = true;
    window.clearTimeout(timer);
    refresh();
  });
  document.getElementById('host-input').value = view.host;
  document.getElementById('host-search').addEventListener('submit', function (event) {
    event.preventDefault();
    view.host = document.getElementById('host-input').value.trim();
    goTo(null, []);
  });
  document.getElementById('page-next').addEventListener('click', function () {
    if (view.next) { goTo(view.next, view.markers.concat([view.marker])); }
  });
  document.getElementById('page-prev').addEventListener('click', function () {
    if (view.markers.length) {
      goTo(view.markers[view.markers.length - 1], view.markers.slice(0, -1));
    }
  });
  document.getElementById('page-first').addEventListener('click', function () {
    goTo(null, []);
  });
  document.getElementById('token-clear').addEventListener('click', function () {
    window.sessionStorage.removeItem(TOKEN_KEY);
    document.getElementById('token-input').value = '';
  });
  refresh();
})();
