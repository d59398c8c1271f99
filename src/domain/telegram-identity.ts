/** Who a person is on Telegram, as the bot or the Login Widget vouches for them. */
export interface TelegramIdentity {
  id: number;
  first_name?: string | undefined;
  username?: string | undefined;
}
