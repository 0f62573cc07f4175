import { createRequire } from 'node:module';
import { openSync } from 'fontkit';

// DejaVu, embedded (subset) in each document: PDF's standard fonts encode only Windows-1252, which
// turned Greek, Cyrillic and the like into other characters. DejaVu covers Latin, Greek, Cyrillic,
// Armenian, Georgian and many symbols; a character a face lacks (CJK, most emoji) shows as an empty
// box, and is reported (missingCharacters) so that the model can write it another way.
const require = createRequire(import.meta.url);
const fontFile = (name: string) => require.resolve(`dejavu-fonts-ttf/ttf/${name}.ttf`);
const face = (family: string) => ({
  normal: fontFile(family),
  bold: fontFile(`${family}-Bold`),
  italics: fontFile(`${family}-Oblique`),
  bolditalics: fontFile(`${family}-BoldOblique`),
});
export const FONTS = { Sans: face('DejaVuSans'), Mono: face('DejaVuSansMono') };
export type FontName = keyof typeof FONTS;
export const FONT_FILES = new Set(Object.values(FONTS).flatMap((family) => Object.values(family)));

/** What a run of text is set in: pdfmake's font, bold and italics, inherited from styles and parents. */
export interface Face {
  font: FontName;
  bold: boolean;
  italics: boolean;
}

const characterSets = new Map<string, Set<number>>();
/** The code points a face has glyphs for, read from its file once per thread. */
function characterSet(face: Face): Set<number> {
  const file = FONTS[face.font][face.bold ? (face.italics ? 'bolditalics' : 'bold') : face.italics ? 'italics' : 'normal'];
  let set = characterSets.get(file);
  if (!set) {
    set = new Set(openSync(file).characterSet);
    characterSets.set(file, set);
  }
  return set;
}

// Control characters (line breaks, tabs) are layout, never drawn.
const CONTROL = /\p{Cc}/u;

/** Gathers the characters a document sets in a face that has no glyph for them. */
export class MissingCharacters {
  private readonly found = new Set<string>();

  check(text: string, face: Face): void {
    const set = characterSet(face);
    for (const character of text) if (!set.has(character.codePointAt(0)!) && !CONTROL.test(character)) this.found.add(character);
  }

  /** In order of code point, each once. */
  list(): string[] {
    return [...this.found].sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!);
  }
}
