/** The rule for a new password (an invitation accepted, a password change). */
import { AppError } from '../../lib/errors.js';

export const PASSWORD_MIN_LENGTH = 10;
/** bcrypt reads at most 72 bytes: a longer password would silently be cut there. */
export const PASSWORD_MAX_BYTES = 72;

export function checkNewPassword(password: string, field = 'password'): void {
  if ([...password].length < PASSWORD_MIN_LENGTH || Buffer.byteLength(password) > PASSWORD_MAX_BYTES) {
    throw new AppError(
      'BAD_REQUEST',
      `The new password must have at least ${PASSWORD_MIN_LENGTH} characters and at most ${PASSWORD_MAX_BYTES} bytes.`,
      {
        errors: [{ field, message: `at least ${PASSWORD_MIN_LENGTH} characters, at most ${PASSWORD_MAX_BYTES} bytes` }],
      },
    );
  }
}
