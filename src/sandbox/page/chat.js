// @ts-check
// The sandbox chat page: plays the Telegram app for the simulated people, through the control API.
// Type-checked by `npm run typecheck` (tsconfig.json beside it), with JSDoc where a DOM element's
// kind is known only to the page's HTML.
const ROOT = location.pathname.replace(/\/+$/, "");
const API = `${ROOT}/api`;
/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
/** @param {string} id */
const $input = (id) => /** @type {HTMLInputElement} */ (document.getElementById(id));

const state = {
  bot: null,
  users: [],
  chats: [],
  me: Number(localStorage.getItem("sandbox.person")) || null,
  chatId: null,
  messages: [],
  /**
   * While a chat's history is being fetched: the live events for it that came meanwhile, applied
   * to the history once it is here (it may or may not hold them already; applying one again
   * changes nothing). Without this, a message sent while the chat opened was lost to the page.
   */
  pending: null,
  replyTo: null,
};

async function api(method, path, body) {
  const response = await fetch(`${API}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = response.status === 204 ? null : await response.json();
  if (!response.ok) throw new Error(data?.error?.message ?? `HTTP ${response.status}`);
  return data;
}

/** A callback answer with show_alert: Telegram's modal alert, in the page (no browser pop-up). */
function showAlert(text) {
  const dialog = /** @type {HTMLDialogElement} */ ($("bot-alert"));
  $("bot-alert-text").textContent = text;
  if (!dialog.open) dialog.showModal();
}

/** @type {ReturnType<typeof setTimeout> | undefined} */
let toastTimer;

function toast(text) {
  const box = $("toast");
  box.textContent = text;
  box.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    box.hidden = true;
  }, 4000);
}

const currentChat = () => state.chats.find((chat) => chat.id === state.chatId);
const isPrivate = () => state.chatId === state.me;

// ------------------------------------------------------------------ entities → DOM

function elementFor(entity, text) {
  const tag = {
    bold: "strong",
    italic: "em",
    underline: "u",
    strikethrough: "s",
    code: "code",
    blockquote: "blockquote",
    expandable_blockquote: "blockquote",
  }[entity.type];
  if (tag) return document.createElement(tag);
  if (entity.type === "pre") {
    const pre = document.createElement("pre");
    const code = document.createElement("code");
    if (entity.language) code.className = `language-${entity.language}`;
    pre.append(code);
    return { outer: pre, inner: code };
  }
  if (entity.type === "spoiler") {
    const span = document.createElement("span");
    span.className = "spoiler";
    span.tabIndex = 0;
    span.setAttribute("role", "button");
    span.setAttribute("aria-label", "Hidden text, press to reveal");
    span.addEventListener("click", () => span.classList.add("revealed"));
    return span;
  }
  const href = entity.type === "url" ? withScheme(text) : entity.url;
  if ((entity.type === "text_link" || entity.type === "url") && /^(https?|tg|ton):/i.test(href ?? "")) {
    const a = document.createElement("a");
    a.href = localLink(href);
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    return a;
  }
  if (entity.type === "bot_command") {
    const a = document.createElement("a");
    a.href = "#";
    a.addEventListener("click", (event) => {
      event.preventDefault();
      send(text);
    });
    return a;
  }
  if (["hashtag", "cashtag", "mention", "email", "phone_number"].includes(entity.type)) {
    const span = document.createElement("span");
    span.className = "entity-link";
    return span;
  }
  return document.createElement("span");
}

const withScheme = (url) => (/^[a-z]+:\/\//i.test(url) ? url : `https://${url}`);

/** A t.me start link for this bot opens this page instead, as Telegram would open the app. */
function localLink(url) {
  try {
    const parsed = new URL(url);
    const bot = state.bot?.username?.toLowerCase();
    if (parsed.hostname === "t.me" && parsed.pathname.slice(1).toLowerCase() === bot) {
      const start = parsed.searchParams.get("start");
      return start === null ? ROOT : `${ROOT}?start=${encodeURIComponent(start)}`;
    }
  } catch {}
  return url;
}

/** Renders `text[start, end)` with the entities inside it, nesting them as Telegram apps do. */
function renderText(parent, text, entities, start = 0, end = text.length) {
  let position = start;
  const inside = entities
    .filter((e) => e.offset >= start && e.offset + e.length <= end)
    .sort((a, b) => a.offset - b.offset || b.length - a.length);
  for (const entity of inside) {
    if (entity.offset < position) continue;
    parent.append(text.slice(position, entity.offset));
    const entityEnd = entity.offset + entity.length;
    const made = elementFor(entity, text.slice(entity.offset, entityEnd));
    const outer = made.outer ?? made;
    const inner = made.inner ?? made;
    renderText(
      inner,
      text,
      entities.filter((e) => e !== entity),
      entity.offset,
      entityEnd,
    );
    parent.append(outer);
    position = entityEnd;
  }
  parent.append(text.slice(position, end));
}

// ------------------------------------------------------------------ rendering

function personName(id) {
  if (state.bot && id === state.bot.id) return state.bot.first_name;
  const user = state.users.find((u) => u.id === id);
  return user ? [user.first_name, user.last_name].filter(Boolean).join(" ") : String(id);
}

function renderPeople() {
  const select = $("person");
  select.replaceChildren(
    ...state.users.map((user) => {
      const option = document.createElement("option");
      option.value = String(user.id);
      option.textContent = `${personName(user.id)}${user.username ? ` (@${user.username})` : ""}`;
      option.selected = user.id === state.me;
      return option;
    }),
  );
}

function renderChatList() {
  const entries = [{ id: state.me, label: `${state.bot?.first_name ?? "Bot"}` }];
  for (const chat of state.chats) {
    if (chat.type !== "private" && chat.members.includes(state.me))
      entries.push({ id: chat.id, label: chat.title });
  }
  $("chat-list").replaceChildren(
    ...entries.map((entry) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = entry.label;
      if (entry.id === state.chatId) button.setAttribute("aria-current", "true");
      button.addEventListener("click", () => openChat(entry.id));
      item.append(button);
      return item;
    }),
  );
}

function serviceText(message) {
  if (message.new_chat_members) {
    return `${personName(message.from.id)} added ${message.new_chat_members.map((u) => u.first_name).join(", ")}`;
  }
  if (message.left_chat_member) return `${message.left_chat_member.first_name} left the group`;
  if (message.new_chat_title !== undefined) {
    return `${personName(message.from.id)} changed the group name to “${message.new_chat_title}”`;
  }
  return null;
}

function renderMessage(message) {
  const item = document.createElement("li");
  item.dataset.messageId = String(message.message_id);
  const service = serviceText(message);
  if (service !== null) {
    item.className = "service";
    item.textContent = service;
    return item;
  }
  const mine = message.from.id === state.me;
  item.className = `message${mine ? " mine" : ""}`;
  const bubble = document.createElement("div");
  bubble.className = "bubble";
  if (!mine && !isPrivate()) {
    const sender = document.createElement("div");
    sender.className = "sender";
    sender.textContent = personName(message.from.id);
    bubble.append(sender);
  }
  if (message.reply_to_message) {
    const quote = document.createElement("div");
    quote.className = "quote";
    quote.textContent = `${personName(message.reply_to_message.from.id)}: ${(message.reply_to_message.text ?? "").slice(0, 80)}`;
    bubble.append(quote);
  }
  const body = document.createElement("div");
  body.className = "text";
  renderText(body, message.text ?? "", message.entities ?? []);
  bubble.append(body);
  const preview = linkPreview(message);
  if (preview) bubble.append(preview);
  const meta = document.createElement("div");
  meta.className = "meta";
  const time = new Date(message.date * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  meta.textContent = `${message.edit_date ? "edited " : ""}${time}`;
  if (message.disable_notification) meta.prepend(badge("🔕", "Arrived without a sound"));
  if (message.has_protected_content) meta.prepend(badge("🔒", "Cannot be forwarded or saved"));
  const reply = document.createElement("button");
  reply.type = "button";
  reply.textContent = "Reply";
  reply.setAttribute("aria-label", `Reply to message ${message.message_id}`);
  reply.addEventListener("click", () => setReplyTo(message));
  meta.append(reply);
  bubble.append(meta);
  item.append(bubble);
  const keyboard = message.reply_markup?.inline_keyboard;
  if (keyboard) item.append(renderInlineKeyboard(message, keyboard));
  return item;
}

function badge(symbol, label) {
  const span = document.createElement("span");
  span.className = "badge";
  span.textContent = symbol;
  span.title = label;
  span.setAttribute("aria-label", label);
  span.setAttribute("role", "img");
  return span;
}

/** Telegram shows a preview of the first link unless the sender turned previews off. */
function linkPreview(message) {
  if (message.link_preview_options?.is_disabled || message.from.id !== state.bot?.id) return null;
  const text = message.text ?? "";
  const link = (message.entities ?? []).find((e) => e.type === "text_link" || e.type === "url");
  if (!link) return null;
  const url = link.type === "url" ? withScheme(text.slice(link.offset, link.offset + link.length)) : link.url;
  let host;
  try {
    host = new URL(url).host;
  } catch {
    return null;
  }
  const card = document.createElement("div");
  card.className = "link-preview";
  card.textContent = host;
  card.setAttribute("aria-label", `Link preview: ${host}`);
  return card;
}

function renderInlineKeyboard(message, keyboard) {
  const box = document.createElement("div");
  box.className = "inline-keyboard";
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", "Message buttons");
  keyboard.forEach((row, rowIndex) => {
    const line = document.createElement("div");
    line.className = "row";
    row.forEach((button, column) => {
      const element = document.createElement("button");
      element.type = "button";
      element.textContent = button.url ? `${button.text} ↗` : button.text;
      element.addEventListener("click", () => press(message.message_id, rowIndex, column));
      line.append(element);
    });
    box.append(line);
  });
  return box;
}

function renderMessages() {
  const list = $("messages");
  list.replaceChildren(...state.messages.map(renderMessage));
  const log = $("message-log");
  log.scrollTop = log.scrollHeight;
}

/** Where the bot stands in a group, as its header says it (Telegram's member statuses). */
const BOT_IN_GROUP = {
  member: "bot in the group",
  administrator: "bot is an admin",
  left: "bot not in the group",
  kicked: "bot removed",
};

/** A person's place in a group, as the chat page offers to change it (Telegram's member statuses). */
const MEMBER_STATUSES = [
  ["administrator", "administrator"],
  ["member", "member"],
  ["left", "not in the group"],
];

/**
 * A group's people and their status (creator, administrator, member, not in it): each but the
 * creator changeable, through the control API's PUT /chats/:id/members/:user_id. Updated in place,
 * so a list being used keeps its focus when the chat changes.
 */
function renderMembers(chat) {
  const panel = $("members");
  panel.hidden = !chat || chat.type === "private";
  if (panel.hidden) return;
  const count = chat.members.length;
  $("members-summary").textContent = `Members (${count}) and administrators`;
  const list = $("member-list");
  if (list.dataset.chat !== String(chat.id)) {
    list.replaceChildren();
    list.dataset.chat = String(chat.id);
  }
  const items = state.users.map((user) => {
    let item = /** @type {HTMLElement | null} */ (list.querySelector(`li[data-user="${user.id}"]`));
    if (!item) {
      item = document.createElement("li");
      item.dataset.user = String(user.id);
      const name = document.createElement("span");
      item.append(name);
    }
    const name = personName(user.id);
    item.firstElementChild.textContent = name;
    const creator = chat.creator_id === user.id;
    let control = /** @type {HTMLSelectElement | HTMLSpanElement | undefined} */ (item.children[1]);
    if (creator && control?.tagName !== "SPAN") {
      control?.remove();
      control = document.createElement("span");
      control.className = "hint";
      control.textContent = "creator";
      item.append(control);
    } else if (!creator && control?.tagName !== "SELECT") {
      control?.remove();
      control = document.createElement("select");
      for (const [value, label] of MEMBER_STATUSES) {
        const option = document.createElement("option");
        option.value = value;
        option.textContent = label;
        control.append(option);
      }
      control.addEventListener("change", (event) =>
        act(async () => {
          try {
            await api("PUT", `/chats/${chat.id}/members/${user.id}`, {
              status: /** @type {HTMLSelectElement} */ (event.target).value,
            });
          } finally {
            renderChrome();
          }
        }),
      );
      item.append(control);
    }
    if (!creator) {
      control.setAttribute("aria-label", `Status of ${name}`);
      /** @type {HTMLSelectElement} */ (control).value = chat.admins.includes(user.id)
        ? "administrator"
        : chat.members.includes(user.id)
          ? "member"
          : "left";
    }
    return item;
  });
  for (const item of /** @type {HTMLElement[]} */ ([...list.children]))
    if (!items.includes(item)) item.remove();
  // Only what is out of place moves (a moved list would lose the focus).
  items.forEach((item, index) => {
    if (list.children[index] !== item) list.insertBefore(item, list.children[index] ?? null);
  });
}

function renderChrome() {
  const chat = currentChat();
  const privateChat = isPrivate();
  const title = privateChat ? state.bot?.first_name : (chat?.title ?? "");
  $("chat-title").textContent = title;
  // The first character as a person reads it (an emoji is two UTF-16 units).
  $("chat-avatar").textContent = (Array.from((title ?? "").trim())[0] ?? "?").toUpperCase();
  const members = chat?.members.length ?? 0;
  $("chat-subtitle").textContent = privateChat
    ? `@${state.bot?.username} · bot`
    : `${members} ${members === 1 ? "member" : "members"} · ${BOT_IN_GROUP[chat?.bot_status ?? "left"] ?? "bot not in the group"}`;
  const blocked = Boolean(chat?.blocked);
  $("block-label").hidden = !privateChat;
  $input("block-toggle").checked = blocked;
  $("member-label").hidden = privateChat;
  $input("member-toggle").checked = chat?.bot_status === "member" || chat?.bot_status === "administrator";
  renderMembers(privateChat ? null : chat);
  const needsStart = privateChat && (blocked || state.messages.length === 0);
  $("start-bar").hidden = !needsStart;
  $("start").textContent = blocked ? "Restart bot" : "Start";
  $("composer").hidden = needsStart;
  const keyboard = chat?.reply_keyboard?.keyboard;
  const box = $("keyboard");
  box.hidden = !keyboard || needsStart;
  box.replaceChildren(
    ...(keyboard ?? []).map((row) => {
      const line = document.createElement("div");
      line.className = "row";
      for (const button of row) {
        const element = document.createElement("button");
        element.type = "button";
        element.textContent = button.text;
        element.addEventListener("click", () => pressKeyboard(button.text));
        line.append(element);
      }
      return line;
    }),
  );
  $input("text").placeholder = chat?.reply_keyboard?.input_field_placeholder ?? "Message";
  const last = state.messages.at(-1);
  if (last?.reply_markup?.force_reply && last.from.id === state.bot?.id && state.replyTo === null)
    setReplyTo(last);
  renderReplyBar();
}

function renderReplyBar() {
  const bar = $("reply-bar");
  bar.hidden = state.replyTo === null;
  if (state.replyTo !== null) {
    $("reply-text").textContent =
      `Replying to ${personName(state.replyTo.from.id)}: ${(state.replyTo.text ?? "").slice(0, 60)}`;
    if (state.replyTo.reply_markup?.input_field_placeholder) {
      $input("text").placeholder = state.replyTo.reply_markup.input_field_placeholder;
    }
  }
}

function setReplyTo(message) {
  state.replyTo = message;
  renderReplyBar();
  $("text").focus();
}

// ------------------------------------------------------------------ actions

async function refresh() {
  [state.users, state.chats] = await Promise.all([api("GET", "/users"), api("GET", "/chats")]);
  renderPeople();
  renderChatList();
}

async function openChat(chatId) {
  state.chatId = chatId;
  state.replyTo = null;
  localStorage.setItem("sandbox.chat", String(chatId));
  const known = state.chats.some((chat) => chat.id === chatId);
  const pending = [];
  state.pending = pending;
  let history = [];
  let current = false;
  try {
    history = known ? await api("GET", `/chats/${chatId}/messages?limit=200`) : [];
  } finally {
    // Another chat was opened meanwhile: it shows that one. Else the events that came are applied,
    // even when the history could not be read (the live stream goes on showing the chat).
    current = state.pending === pending;
    if (current) {
      state.pending = null;
      state.messages = history;
      for (const event of pending) applyMessageEvent(event);
    }
  }
  if (!current) return;
  renderChatList();
  renderMessages();
  renderChrome();
}

async function act(work) {
  try {
    await work();
  } catch (error) {
    toast(error instanceof Error ? error.message : String(error));
  }
}

function send(text) {
  return act(async () => {
    const body = { from: state.me, text };
    const replying = state.replyTo;
    if (replying) body.reply_to_message_id = replying.message_id;
    // Let go before the message is out: the bot's answer may come first and ask for a reply in
    // turn (force_reply), which must stay.
    state.replyTo = null;
    renderReplyBar();
    try {
      await api("POST", `/chats/${state.chatId}/messages`, body);
    } catch (error) {
      // Not sent: still a reply to what it was.
      if (state.replyTo === null && replying) setReplyTo(replying);
      throw error;
    }
  });
}

function press(messageId, row, column) {
  return act(async () => {
    const result = await api("POST", `/chats/${state.chatId}/messages/${messageId}/press`, {
      from: state.me,
      row,
      column,
    });
    if (result.url) window.open(localLink(result.url), "_blank", "noopener");
  });
}

function pressKeyboard(text) {
  return act(() => api("POST", `/chats/${state.chatId}/keyboard`, { from: state.me, text }));
}

function start(payload) {
  return act(() => api("POST", `/users/${state.me}/start`, payload ? { payload } : {}));
}

// ------------------------------------------------------------------ live events

/** A message sent, edited or deleted in the open chat, applied to its messages (again: no change). */
function applyMessageEvent(event) {
  if (event.type === "message") {
    if (!state.messages.some((m) => m.message_id === event.message.message_id)) {
      state.messages.push(event.message);
      state.messages.sort((a, b) => a.message_id - b.message_id);
    }
  } else if (event.type === "message_edited") {
    state.messages = state.messages.map((m) =>
      m.message_id === event.message.message_id ? event.message : m,
    );
  } else {
    state.messages = state.messages.filter((m) => m.message_id !== event.message_id);
  }
}

function onEvent(event) {
  switch (event.type) {
    case "message":
    case "message_edited":
    case "message_deleted":
      if (event.chat_id !== state.chatId) break;
      if (state.pending !== null) {
        state.pending.push(event);
        break;
      }
      applyMessageEvent(event);
      renderMessages();
      if (event.type === "message") renderChrome();
      break;
    case "callback_answer":
      if (event.chat_id === state.chatId && event.text) {
        if (event.show_alert) showAlert(event.text);
        else toast(event.text);
      }
      if (event.url) window.open(localLink(event.url), "_blank", "noopener");
      break;
    case "chat_updated":
    case "chat_created":
      state.chats = [...state.chats.filter((c) => c.id !== event.chat.id), event.chat];
      renderChatList();
      if (event.chat.id === state.chatId) renderChrome();
      break;
    case "user_created":
      state.users = [...state.users.filter((u) => u.id !== event.user.id), event.user];
      renderPeople();
      renderMembers(isPrivate() ? null : currentChat());
      break;
    case "reset":
      location.reload();
      break;
  }
}

function listen() {
  const source = new EventSource(`${API}/events`);
  for (const type of [
    "message",
    "message_edited",
    "message_deleted",
    "callback_answer",
    "chat_updated",
    "chat_created",
    "user_created",
    "reset",
  ]) {
    source.addEventListener(type, (event) => onEvent(JSON.parse(event.data)));
  }
  return new Promise((resolve) => source.addEventListener("open", resolve, { once: true }));
}

// ------------------------------------------------------------------ start-up

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = $input("text");
  const text = input.value;
  if (text.trim() === "") return;
  input.value = "";
  send(text);
});
$("reply-cancel").addEventListener("click", () => {
  state.replyTo = null;
  renderReplyBar();
});
$("start").addEventListener("click", () => start());
$("block-toggle").addEventListener("change", (event) =>
  act(() =>
    api(
      "POST",
      `/users/${state.me}/${/** @type {HTMLInputElement} */ (event.target).checked ? "block" : "unblock"}`,
    ),
  ),
);
$("member-toggle").addEventListener("change", (event) =>
  act(() =>
    api("POST", `/chats/${state.chatId}/bot`, {
      from: state.me,
      status: /** @type {HTMLInputElement} */ (event.target).checked ? "member" : "left",
    }),
  ),
);
$("person").addEventListener("change", (event) => {
  state.me = Number(/** @type {HTMLSelectElement} */ (event.target).value);
  localStorage.setItem("sandbox.person", String(state.me));
  renderChatList();
  openChat(state.me);
});
$("bot-alert-ok").addEventListener("click", () => /** @type {HTMLDialogElement} */ ($("bot-alert")).close());

/**
 * A form in the page that a button opens (never a browser pop-up): one text field, its error
 * under it, Cancel or Escape closing it and giving the focus back to the button. `submit` does the
 * work with the trimmed value; what it throws is shown as the field's error.
 */
function inlineForm(buttonId, formId, inputId, errorId, empty, submit) {
  const button = $(buttonId);
  const form = /** @type {HTMLFormElement} */ ($(formId));
  const input = $input(inputId);
  const error = $(errorId);
  const showError = (text) => {
    error.textContent = text;
    error.hidden = text === "";
    input.setAttribute("aria-invalid", String(text !== ""));
    if (text !== "") input.setAttribute("aria-describedby", errorId);
    else input.removeAttribute("aria-describedby");
  };
  const close = () => {
    form.hidden = true;
    button.setAttribute("aria-expanded", "false");
    showError("");
    button.focus();
  };
  button.addEventListener("click", () => {
    if (!form.hidden) return close();
    form.reset();
    showError("");
    form.hidden = false;
    button.setAttribute("aria-expanded", "true");
    input.focus();
  });
  form.querySelector("[data-cancel]").addEventListener("click", close);
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      close();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (value === "") {
      showError(empty);
      input.focus();
      return;
    }
    const submitButton = /** @type {HTMLButtonElement} */ (form.querySelector("[type=submit]"));
    submitButton.disabled = true;
    try {
      await submit(value);
      close();
    } catch (failure) {
      showError(failure instanceof Error ? failure.message : String(failure));
      input.focus();
    } finally {
      submitButton.disabled = false;
    }
  });
}

inlineForm(
  "new-person",
  "new-person-form",
  "new-person-name",
  "new-person-error",
  "Enter a first name.",
  async (name) => {
    const user = await api("POST", "/users", { first_name: name });
    state.me = user.id;
    localStorage.setItem("sandbox.person", String(user.id));
    await refresh();
    await openChat(user.id);
  },
);
inlineForm(
  "new-group",
  "new-group-form",
  "new-group-title",
  "new-group-error",
  "Enter a title.",
  async (title) => {
    const members = [state.me, ...state.users.map((u) => u.id).filter((id) => id !== state.me)];
    const group = await api("POST", "/groups", { title, members });
    await refresh();
    await openChat(group.id);
  },
);

async function main() {
  state.bot = await api("GET", "/bot");
  $("api-root").textContent = `${location.origin}${ROOT}`;
  await listen();
  await refresh();
  if (state.users.length === 0) {
    await api("POST", "/users", { first_name: "Alice", username: "alice_sandbox", language_code: "en" });
    await refresh();
  }
  if (!state.users.some((user) => user.id === state.me)) state.me = state.users[0].id;
  localStorage.setItem("sandbox.person", String(state.me));
  renderPeople();
  const params = new URLSearchParams(location.search);
  const payload = params.get("start");
  const saved = Number(localStorage.getItem("sandbox.chat"));
  const chatId = params.has("start") ? state.me : state.chats.some((c) => c.id === saved) ? saved : state.me;
  await openChat(chatId);
  if (params.has("start")) {
    // Drop ?start= so a reload does not send /start again.
    history.replaceState(null, "", ROOT);
    await start(payload || undefined);
  }
}

main().catch((error) => toast(`The sandbox did not load: ${error.message}`));
