/**
 * Why a section could not be read (the service unreachable, the database down): shown while it
 * lasts, gone with the next read that works. Apart from the Dock's action errors, which a live
 * read never clears.
 */
export function ReadError({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      Could not read this: {(error as Error).message}
    </p>
  );
}
