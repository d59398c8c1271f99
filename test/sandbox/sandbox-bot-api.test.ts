import { GrammyError } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_BOT_ID, SANDBOX_BOT_TOKEN, SANDBOX_BOT_USERNAME } from "../../src/telegram/sandbox-bot.ts";
import { type RunningSandbox, startSandbox } from "../helpers/sandbox-harness.ts";

/** The GrammyError a call fails with, so a test can look at Telegram's code and description. */
async function failure(call: Promise<unknown>): Promise<GrammyError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof GrammyError) return error;
    throw error;
  }
  throw new Error("the call succeeded");
}

describe("sandbox Bot API through grammY", () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox();
  });
  afterAll(() => sandbox.close());

  it("getMe answers the sandbox bot, whose token has Telegram's shape", async () => {
    expect(SANDBOX_BOT_TOKEN).toMatch(/^\d+:[A-Za-z0-9_-]{35}$/);
    expect(Number(SANDBOX_BOT_TOKEN.split(":")[0])).toBe(SANDBOX_BOT_ID);
    const me = await sandbox.api.getMe();
    expect(me).toMatchObject({ id: SANDBOX_BOT_ID, is_bot: true, username: SANDBOX_BOT_USERNAME });
  });

  it("sendMessage stores the message with entities, inline keyboard and reply", async () => {
    const chat = await sandbox.startedPerson("Ada");
    const first = await sandbox.api.sendMessage(chat, "plain");
    const sent = await sandbox.api.sendMessage(chat, '<b>Hello</b> <a href="https://example.com">site</a>', {
      parse_mode: "HTML",
      reply_markup: { inline_keyboard: [[{ text: "Yes", callback_data: "yes" }]] },
      link_preview_options: { is_disabled: true },
      disable_notification: true,
      reply_parameters: { message_id: first.message_id },
    });
    expect(sent.text).toBe("Hello site");
    expect(sent.entities).toEqual([
      { type: "bold", offset: 0, length: 5 },
      { type: "text_link", offset: 6, length: 4, url: "https://example.com" },
    ]);
    expect(sent.reply_markup).toEqual({ inline_keyboard: [[{ text: "Yes", callback_data: "yes" }]] });
    expect(sent.reply_to_message?.message_id).toBe(first.message_id);
    expect(sent.chat).toMatchObject({ id: chat, type: "private", first_name: "Ada" });

    const history = await sandbox.control("GET", `/chats/${chat}/messages`);
    expect(history.body.map((m: { text: string }) => m.text)).toEqual(["/start", "plain", "Hello site"]);
  });

  it("refuses links Telegram refuses: a button URL or a text_link without a dotted host, a port 0, a tg: host with dots", async () => {
    const chat = await sandbox.startedPerson();
    for (const url of ["http://localhost:3000", "http://jenkins/job/1", "https://a.example:0/", "tg://a.b"]) {
      const button = await failure(
        sandbox.api.sendMessage(chat, "x", { reply_markup: { inline_keyboard: [[{ text: "Go", url }]] } }),
      );
      expect(button.description).toBe(
        `Bad Request: inline keyboard button URL '${url}' is invalid: Wrong HTTP URL`,
      );
      const link = await failure(
        sandbox.api.sendMessage(chat, "x", { entities: [{ type: "text_link", offset: 0, length: 1, url }] }),
      );
      expect(link.description).toBe("Bad Request: can't parse entities: Wrong URL specified");
    }
    // In parse_mode the link is dropped and the text stays, as Telegram does.
    const parsed = await sandbox.api.sendMessage(chat, '<a href="http://localhost:3000">here</a>', {
      parse_mode: "HTML",
    });
    expect(parsed.text).toBe("here");
    expect(parsed.entities).toBeUndefined();
    // A protected message says so; a silent one is marked in the sandbox's history.
    const quiet = await sandbox.api.sendMessage(chat, "hush", {
      disable_notification: true,
      protect_content: true,
    });
    expect(quiet.has_protected_content).toBe(true);
    const history = await sandbox.control("GET", `/chats/${chat}/messages?limit=1`);
    expect(history.body[0]).toMatchObject({
      text: "hush",
      disable_notification: true,
      has_protected_content: true,
    });
  });

  it("reply keyboards, force_reply and remove_keyboard change the person's keyboard", async () => {
    const chat = await sandbox.startedPerson();
    await sandbox.api.sendMessage(chat, "Pick", {
      reply_markup: { keyboard: [[{ text: "One" }, { text: "Two" }]], one_time_keyboard: true },
    });
    expect((await sandbox.control("GET", `/chats/${chat}`)).body.reply_keyboard.keyboard[0][1].text).toBe(
      "Two",
    );
    await sandbox.api.sendMessage(chat, "Gone", { reply_markup: { remove_keyboard: true } });
    expect((await sandbox.control("GET", `/chats/${chat}`)).body.reply_keyboard).toBeNull();
    const prompt = await sandbox.api.sendMessage(chat, "Your name?", { reply_markup: { force_reply: true } });
    expect(prompt.reply_markup).toBeUndefined();
    const history = await sandbox.control("GET", `/chats/${chat}/messages?limit=1`);
    expect(history.body[0].reply_markup).toEqual({ force_reply: true });
  });

  it("editMessageText and editMessageReplyMarkup change the message; unchanged edits are refused", async () => {
    const chat = await sandbox.startedPerson();
    const sent = await sandbox.api.sendMessage(chat, "v1", {
      reply_markup: { inline_keyboard: [[{ text: "A", callback_data: "a" }]] },
    });
    const edited = await sandbox.api.editMessageText(chat, sent.message_id, "*v2*", {
      parse_mode: "MarkdownV2",
    });
    expect(edited).toMatchObject({ text: "v2", entities: [{ type: "bold", offset: 0, length: 2 }] });
    expect(edited !== true && edited.edit_date).toBeTypeOf("number");
    // Without reply_markup an edit removes the keyboard, as on Telegram.
    expect(edited !== true && edited.reply_markup).toBeUndefined();

    const same = await failure(
      sandbox.api.editMessageText(chat, sent.message_id, "*v2*", { parse_mode: "MarkdownV2" }),
    );
    expect(same.error_code).toBe(400);
    expect(same.description).toMatch(/^Bad Request: message is not modified/);

    const markup = { inline_keyboard: [[{ text: "B", callback_data: "b" }]] };
    const withButtons = await sandbox.api.editMessageReplyMarkup(chat, sent.message_id, {
      reply_markup: markup,
    });
    expect(withButtons !== true && withButtons.reply_markup).toEqual(markup);

    const missing = await failure(sandbox.api.editMessageText(chat, 999, "x"));
    expect(missing.description).toBe("Bad Request: message to edit not found");
    const history = await sandbox.control("GET", `/chats/${chat}/messages?limit=1`);
    expect(history.body[0]).toMatchObject({ text: "v2", reply_markup: markup });
  });

  it("deleteMessage removes the message from the history", async () => {
    const chat = await sandbox.startedPerson();
    const sent = await sandbox.api.sendMessage(chat, "soon gone");
    expect(await sandbox.api.deleteMessage(chat, sent.message_id)).toBe(true);
    const again = await failure(sandbox.api.deleteMessage(chat, sent.message_id));
    expect(again.description).toBe("Bad Request: message to delete not found");
    const history = await sandbox.control("GET", `/chats/${chat}/messages`);
    expect(history.body.map((m: { text: string }) => m.text)).toEqual(["/start"]);
  });

  it("answerCallbackQuery answers a pressed button once", async () => {
    const chat = await sandbox.startedPerson();
    const sent = await sandbox.api.sendMessage(chat, "Sure?", {
      reply_markup: { inline_keyboard: [[{ text: "Yes", callback_data: "yes" }]] },
    });
    const press = await sandbox.control("POST", `/chats/${chat}/messages/${sent.message_id}/press`, {
      callback_data: "yes",
    });
    const id = press.body.callback_query_id as string;
    expect(await sandbox.api.answerCallbackQuery(id, { text: "Done" })).toBe(true);
    expect((await sandbox.control("GET", `/callback-queries/${id}`)).body).toMatchObject({
      answered: true,
      answer: { text: "Done", show_alert: false },
    });
    const twice = await failure(sandbox.api.answerCallbackQuery(id));
    expect(twice.description).toBe(
      "Bad Request: query is too old and response timeout expired or query ID is invalid",
    );
  });

  it("setMyCommands, getMyCommands and deleteMyCommands keep commands per scope and language", async () => {
    const commands = [{ command: "start", description: "Start" }];
    expect(await sandbox.api.setMyCommands(commands)).toBe(true);
    expect(
      await sandbox.api.setMyCommands([{ command: "hilfe", description: "Hilfe" }], { language_code: "de" }),
    ).toBe(true);
    expect(await sandbox.api.getMyCommands()).toEqual(commands);
    expect(await sandbox.api.getMyCommands({ language_code: "de" })).toEqual([
      { command: "hilfe", description: "Hilfe" },
    ]);
    const bad = await failure(sandbox.api.setMyCommands([{ command: "Bad Command", description: "x" }]));
    expect(bad.description).toBe("Bad Request: BOT_COMMAND_INVALID");
    expect(await sandbox.api.deleteMyCommands()).toBe(true);
    expect(await sandbox.api.getMyCommands()).toEqual([]);
  });

  it("getChat, getChatMember, getChatAdministrators and getChatMemberCount describe chats", async () => {
    const alice = await sandbox.startedPerson("Alice");
    const bob = await sandbox.person("Bob");
    const private_ = await sandbox.api.getChat(alice);
    expect(private_).toMatchObject({ id: alice, type: "private", first_name: "Alice" });
    expect(await sandbox.api.getChatMember(alice, alice)).toMatchObject({
      status: "member",
      user: { id: alice },
    });
    const noAdmins = await failure(sandbox.api.getChatAdministrators(alice));
    expect(noAdmins.description).toBe("Bad Request: there are no administrators in the private chat");

    const group = await sandbox.control("POST", "/groups", {
      title: "Team",
      members: [alice, bob],
      admins: [alice],
    });
    expect(group.status).toBe(201);
    const groupId = group.body.id as number;
    await sandbox.control("POST", `/chats/${groupId}/bot`, { from: alice, status: "member" });
    expect(await sandbox.api.getChat(groupId)).toMatchObject({ id: groupId, type: "group", title: "Team" });
    expect((await sandbox.api.getChatMember(groupId, alice)).status).toBe("creator");
    expect((await sandbox.api.getChatMember(groupId, bob)).status).toBe("member");
    expect((await sandbox.api.getChatMember(groupId, SANDBOX_BOT_ID)).status).toBe("member");
    const admins = await sandbox.api.getChatAdministrators(groupId);
    expect(admins.map((m) => [m.user.id, m.status])).toEqual([[alice, "creator"]]);
    expect(await sandbox.api.getChatMemberCount(groupId)).toBe(3);
  });

  it("unknown chats are 400 chat not found; people who never started the bot are 403", async () => {
    const unknown = await failure(sandbox.api.sendMessage(123456, "hi"));
    expect([unknown.error_code, unknown.description]).toEqual([400, "Bad Request: chat not found"]);
    const stranger = await sandbox.person();
    const notStarted = await failure(sandbox.api.sendMessage(stranger, "hi"));
    expect([notStarted.error_code, notStarted.description]).toEqual([
      403,
      "Forbidden: bot can't initiate conversation with a user",
    ]);
  });

  it("blocked people answer 403 bot was blocked by the user", async () => {
    const chat = await sandbox.startedPerson();
    await sandbox.control("POST", `/users/${chat}/block`);
    const blocked = await failure(sandbox.api.sendMessage(chat, "hello?"));
    expect([blocked.error_code, blocked.description]).toEqual([
      403,
      "Forbidden: bot was blocked by the user",
    ]);
    await sandbox.control("POST", `/users/${chat}/unblock`);
    expect((await sandbox.api.sendMessage(chat, "welcome back")).text).toBe("welcome back");
  });

  it("message ids as Telegram gives a bot: one sequence across its private chats and basic groups, the person's messages included; a supergroup numbers its own", async () => {
    const ada = await sandbox.startedPerson("Ada");
    const bo = await sandbox.startedPerson("Bo");
    const first = await sandbox.api.sendMessage(ada, "one");
    const between = await sandbox.api.sendMessage(bo, "elsewhere");
    const said = await sandbox.control("POST", `/chats/${ada}/messages`, { text: "hi bot" });
    const second = await sandbox.api.sendMessage(ada, "two");
    // The id before the bot's second message in Ada's chat is Ada's own; before that, Bo's chat's.
    expect([between.message_id, said.body.message_id, second.message_id]).toEqual([
      first.message_id + 1,
      first.message_id + 2,
      first.message_id + 3,
    ]);
    const group = await sandbox.control("POST", "/groups", { title: "Ops", members: [ada], admins: [ada] });
    await sandbox.control("POST", `/chats/${group.body.id}/bot`, { from: ada, status: "member" });
    const inGroup = await sandbox.api.sendMessage(group.body.id, "to the group");
    expect(inGroup.message_id).toBeGreaterThan(second.message_id);
    const supergroup = await sandbox.control("POST", "/groups", {
      title: "Big",
      type: "supergroup",
      members: [ada],
      admins: [ada],
    });
    await sandbox.control("POST", `/chats/${supergroup.body.id}/bot`, { from: ada, status: "member" });
    const history = await sandbox.control("GET", `/chats/${supergroup.body.id}/messages`);
    const next = (history.body as { message_id: number }[]).length + 1;
    expect((await sandbox.api.sendMessage(supergroup.body.id, "to the supergroup")).message_id).toBe(next);
  });

  it("sendChatAction accepts a typing indicator", async () => {
    const chat = await sandbox.startedPerson();
    expect(await sandbox.api.sendChatAction(chat, "typing")).toBe(true);
  });
});
