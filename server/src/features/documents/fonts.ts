import { createRequire } from 'node:module';
import { openSync } from 'fontkit';

// DejaVu, embedded (subset) in each document: PDF's standard fonts encode only Windows-1252, which
// turned Greek, Cyrillic and the like into other characters. DejaVu covers Latin, Greek, Cyrillic,
// Arabic, Hebrew, Armenian, Georgian and many symbols. A character it lacks is set in the first Noto
// face that has it (Chinese and Japanese, Korean, the scripts of South and South-East Asia, Ethiopic,
// emoji in outline); one no face has shows as an empty box, and is reported (missingCharacters) so
// that the model can write it another way.
const require = createRequire(import.meta.url);
const dejaVu = (family: string) => {
  const file = (name: string) => require.resolve(`dejavu-fonts-ttf/ttf/${name}.ttf`);
  return {
    normal: file(family),
    bold: file(`${family}-Bold`),
    italics: file(`${family}-Oblique`),
    bolditalics: file(`${family}-BoldOblique`),
  };
};
/** Google Fonts' Noto, as Expo packages its static faces (NotoSansKR in @expo-google-fonts/noto-sans-kr). No italics: upright. */
const noto = (family: string) => {
  const pack = family.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase();
  const file = (weight: string) => require.resolve(`@expo-google-fonts/${pack}/${weight}/${family}_${weight}.ttf`);
  return { normal: file('400Regular'), bold: file('700Bold'), italics: file('400Regular'), bolditalics: file('700Bold') };
};
// Tried in this order. Myanmar is left out: fontkit, which lays the text out, does not shape it.
const FALLBACKS = {
  // Noto Sans SC has the Han characters of Chinese and Japanese, and Japanese kana.
  Han: noto('NotoSansSC'),
  Hangul: noto('NotoSansKR'),
  Thai: noto('NotoSansThai'),
  Lao: noto('NotoSansLao'),
  Khmer: noto('NotoSansKhmer'),
  Devanagari: noto('NotoSansDevanagari'),
  Bengali: noto('NotoSansBengali'),
  Gurmukhi: noto('NotoSansGurmukhi'),
  Gujarati: noto('NotoSansGujarati'),
  Oriya: noto('NotoSansOriya'),
  Tamil: noto('NotoSansTamil'),
  Telugu: noto('NotoSansTelugu'),
  Kannada: noto('NotoSansKannada'),
  Malayalam: noto('NotoSansMalayalam'),
  Sinhala: noto('NotoSansSinhala'),
  Ethiopic: noto('NotoSansEthiopic'),
  Emoji: noto('NotoEmoji'),
};
export const FONTS = { Sans: dejaVu('DejaVuSans'), Mono: dejaVu('DejaVuSansMono'), ...FALLBACKS };
export type FontName = keyof typeof FONTS;
export const FONT_FILES = new Set(Object.values(FONTS).flatMap((family) => Object.values(family)));
const FALLBACK_NAMES = Object.keys(FALLBACKS) as FontName[];

/** What a run of text is set in: pdfmake's font, bold and italics, inherited from styles and parents. */
export interface Face {
  font: FontName;
  bold: boolean;
  italics: boolean;
}

const characterSets = new Map<string, Set<number>>();
/** The code points a face has glyphs for, read from its file once per thread, when first needed. */
function characterSet(face: Face): Set<number> {
  const file = FONTS[face.font][face.bold ? (face.italics ? 'bolditalics' : 'bold') : face.italics ? 'italics' : 'normal'];
  let set = characterSets.get(file);
  if (!set) {
    set = new Set(openSync(file).characterSet);
    characterSets.set(file, set);
  }
  return set;
}

/**
 * The faces tried for a character, in order: the run's own; upright, where italics lack it (DejaVu's
 * oblique faces have no Arabic); the text face, where code's lacks it (no Hebrew, no U+200B); Noto.
 */
function candidates(face: Face): Face[] {
  const { bold, italics } = face;
  const list = [face];
  if (italics) list.push({ ...face, italics: false });
  if (face.font === 'Mono') list.push({ font: 'Sans', bold, italics }, { font: 'Sans', bold, italics: false });
  for (const font of FALLBACK_NAMES) list.push({ font, bold, italics });
  return list;
}

// Control characters (line breaks, tabs) are layout, never drawn. Joiners and variation selectors
// inside a character (an emoji sequence) are drawn by the face of the character they join.
const CONTROL = /\p{Cc}/u;
const JOINING = /\p{Default_Ignorable_Code_Point}/u;
// One style of emoji in a document: those shown as pictures are set in Noto Emoji before DejaVu's few.
const EMOJI = /\p{Emoji_Presentation}|\uFE0F/u;
const SPACE = /^\s+$/u;
const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });

/** A piece of a text and the face it is set in, where that differs from its run's. */
export interface FacedText {
  text: string;
  font?: FontName;
  italics?: boolean;
}

/**
 * Splits each text of a document into pieces set in the faces that have its characters (pdfmake sets a
 * run in one font only), and gathers the characters no face has a glyph for.
 */
export class FontFallback {
  private readonly found = new Set<string>();

  /** The text as it is, where its run's face has every character; otherwise its pieces, each with its face. */
  faced(text: string, face: Face): string | FacedText[] {
    const own = characterSet(face);
    const lacking = (character: string) => !own.has(character.codePointAt(0)!) && !CONTROL.test(character);
    if (![...text].some(lacking)) return text;
    const pieces: { text: string; face: Face }[] = [];
    const faces = candidates(face);
    const emojiFirst = [faces.find(({ font }) => font === 'Emoji')!, ...faces];
    for (const { segment } of graphemes.segment(text)) {
      const last = pieces.at(-1);
      // A space after words set in another script's face stays in theirs (emoji are not words).
      const chosen =
        last && last.face.font !== 'Emoji' && SPACE.test(segment) && characterSet(last.face).has(segment.codePointAt(0)!)
          ? last.face
          : this.faceOf(segment, EMOJI.test(segment) ? emojiFirst : faces);
      if (last && (last.face === chosen || chosen === undefined)) last.text += segment;
      else pieces.push({ text: segment, face: chosen ?? last?.face ?? face });
    }
    if (pieces.length === 1 && pieces[0]!.face === face) return text;
    return pieces.map((piece) => ({
      text: piece.text,
      ...(piece.face.font !== face.font && { font: piece.face.font }),
      ...(piece.face.italics !== face.italics && { italics: piece.face.italics }),
    }));
  }

  /** The first face with all of a character's code points (undefined for layout only); what none has is missing. */
  private faceOf(character: string, faces: Face[]): Face | undefined {
    const points = [...character];
    if (points.every((point) => CONTROL.test(point))) return undefined;
    const needed = points.length > 1 ? points.filter((point) => !JOINING.test(point) && !CONTROL.test(point)) : points;
    const has = (face: Face, point: string) => characterSet(face).has(point.codePointAt(0)!);
    const full = faces.find((face) => needed.every((point) => has(face, point)));
    if (full) return full;
    const chosen = faces.find((face) => has(face, needed[0]!)) ?? faces[0]!;
    for (const point of needed) if (!has(chosen, point)) this.found.add(point);
    return chosen;
  }

  /** In order of code point, each once. */
  missing(): string[] {
    return [...this.found].sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!);
  }
}
