// fontkit ships no types; the documents read one thing of a font: the code points it has glyphs for.
declare module 'fontkit' {
  interface Font {
    characterSet: number[];
  }
  export function openSync(path: string): Font;
}
