/**
 * A link as a QR code (an SVG): what the console shows beside a sign-in link or a Dock's invite
 * link, for a phone's camera. The library is loaded on the first use, not at start: most of the
 * time nobody asks for one.
 */
export async function qrSvg(link: string): Promise<string> {
  const { default: QRCode } = await import("qrcode");
  return QRCode.toString(link, { type: "svg", margin: 1, errorCorrectionLevel: "M" });
}
