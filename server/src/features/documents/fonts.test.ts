import { describe, expect, it } from 'vitest';
import { type Face, FontFallback } from './fonts.ts';

const REGULAR: Face = { font: 'Sans', bold: false, italics: false };

describe('the faces a text is set in', () => {
  it('leaves a text its face fully has as it is', () => {
    const fallback = new FontFallback();
    expect(fallback.faced('Ελληνικά, русский, عربي, ✓\n', REGULAR)).toBe('Ελληνικά, русский, عربي, ✓\n');
    expect(fallback.missing()).toEqual([]);
  });

  it('sets each script in the first face that has it, and a space after its words with them', () => {
    const fallback = new FontFallback();
    expect(fallback.faced('Order 注文 払い戻し, 환불 요청 and คืนเงิน or नमस्ते', REGULAR)).toEqual([
      { text: 'Order ' },
      { text: '注文 払い戻し', font: 'Han' },
      { text: ', ' },
      { text: '환불 요청 ', font: 'Hangul' },
      { text: 'and ' },
      { text: 'คืนเงิน ', font: 'Thai' },
      { text: 'or ' },
      { text: 'नमस्ते', font: 'Devanagari' },
    ]);
    expect(fallback.missing()).toEqual([]);
  });

  it('keeps an emoji sequence (joined, with a skin tone or a variation selector) in one face, and spaces out of it', () => {
    const fallback = new FontFallback();
    expect(fallback.faced('Team 🧑‍💻 👍🏽 ❤️!', REGULAR)).toEqual([
      { text: 'Team ' },
      { text: '🧑‍💻', font: 'Emoji' },
      { text: ' ' },
      { text: '👍🏽', font: 'Emoji' },
      { text: ' ' },
      { text: '❤️', font: 'Emoji' },
      { text: '!' },
    ]);
  });

  it('sets what an italic or code face lacks upright or in the text face, before another font', () => {
    const fallback = new FontFallback();
    expect(fallback.faced('an عربي word', { font: 'Sans', bold: true, italics: true })).toEqual([
      { text: 'an ' },
      { text: 'عربي ', italics: false },
      { text: 'word' },
    ]);
    // DejaVu Sans Mono has no Hebrew and no U+200B (the break opportunity added to long words).
    expect(fallback.faced('a\u200Bb עברית', { font: 'Mono', bold: false, italics: false })).toEqual([
      { text: 'a' },
      { text: '\u200B', font: 'Sans' },
      { text: 'b ' },
      { text: 'עברית', font: 'Sans' },
    ]);
    expect(fallback.missing()).toEqual([]);
  });

  it('lists what no face has, each once, in order of code point, and leaves it where it stands', () => {
    const fallback = new FontFallback();
    expect(fallback.faced('ok བོད ok', REGULAR)).toBe('ok བོད ok');
    fallback.faced('𝖠 မ', { font: 'Sans', bold: true, italics: false });
    fallback.faced('𝖠', REGULAR);
    expect(fallback.missing()).toEqual(['ད', 'བ', 'ོ', 'မ', '𝖠']);
  });
});
