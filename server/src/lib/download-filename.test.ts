import { parse } from 'content-disposition';
import { describe, expect, it } from 'vitest';
import { attachmentDisposition, pdfFileName } from './download-filename.ts';

/** The name a browser saves the file as: filename* when there is one, else filename. */
const savedAs = (name: string) => parse(attachmentDisposition(name)).parameters.filename ?? '';

describe('attachmentDisposition', () => {
  it('names an ASCII file plainly, and any other in UTF-8 beside an ASCII fallback (RFC 6266)', () => {
    expect(attachmentDisposition('Order 42 (edited).pdf')).toBe('attachment; filename="Order 42 (edited).pdf"');
    expect(attachmentDisposition('Rapport d’activité 文書.pdf')).toBe(
      'attachment; filename="Rapport d_activit_ __.pdf"; filename*=UTF-8\'\'Rapport%20d%E2%80%99activit%C3%A9%20%E6%96%87%E6%9B%B8.pdf',
    );
    expect(savedAs('Rapport d’activité 文書.pdf')).toBe('Rapport d’activité 文書.pdf');
    expect(attachmentDisposition('say "hi" \\ there.pdf')).toBe('attachment; filename="say _hi_ _ there.pdf"');
  });

  it('keeps nothing a name could deceive or escape with: direction overrides, invisible and control characters, paths', () => {
    // U+202E shows "invoice\u202Efdp.exe" as "invoiceexe.pdf".
    expect(savedAs('invoice\u202Efdp.exe')).toBe('invoice_fdp.exe');
    expect(savedAs('pay\u200Bpal\u2066.pdf')).toBe('pay_pal_.pdf');
    expect(savedAs('line\r\nbreak\u0000\u2028.pdf')).toBe('line__break__.pdf');
    expect(savedAs('../../etc/passwd')).toBe('.._.._etc_passwd');
    expect(savedAs('C:\\Windows\\x?.pdf')).toBe('C__Windows_x_.pdf');
    expect(savedAs('half \uD800 a pair.pdf')).toBe('half \uFFFD a pair.pdf');
  });

  it('cuts a long name to 120 characters, keeping its extension and every character whole', () => {
    const cut = savedAs(`${'😀'.repeat(200)}.pdf`);
    expect(Array.from(cut)).toHaveLength(120);
    expect(cut).toBe(`${'😀'.repeat(116)}.pdf`);
    expect(savedAs('x'.repeat(119))).toBe('x'.repeat(119));
  });

  it("names a document's PDF by its title, made safe the same way (a download, an email's attachment)", () => {
    expect(pdfFileName('Invoice 7')).toBe('Invoice 7.pdf');
    expect(pdfFileName(' Q3\u202E report: final ')).toBe('Q3_ report_ final.pdf');
    expect(pdfFileName('   ')).toBe('document.pdf');
    expect(Array.from(pdfFileName('é'.repeat(300)))).toEqual([...'é'.repeat(116), '.', 'p', 'd', 'f']);
  });

  it('names a file with nothing left by the fallback', () => {
    expect(attachmentDisposition('   ')).toBe('attachment; filename=download');
    expect(attachmentDisposition('', 'document.pdf')).toBe('attachment; filename=document.pdf');
  });
});
