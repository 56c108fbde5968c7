/**
 * An adversarial PII corpus, written apart from test/core/fixtures/pii-corpus.ts by someone
 * who did not design the scrubber: brain-shaped lines (inbox, calendar, daily memory) that
 * each hold one email or phone number in a form people really write, and look-alikes that
 * must come through byte for byte. Decisions recorded in SECURITY.md:
 * - supported: quoted local parts, plus-tags, subdomains, any case, internationalised
 *   (Unicode) addresses, the fullwidth `＠`, and the bracketed `[at]`/`(at)`/`{at}` spellings;
 * - not supported: bare-word `name at example dot com` (indistinguishable from prose),
 *   IP-literal domains, vanity numbers (`1-800-FLOWERS`), card and account numbers (out of scope).
 */

export interface SecurityPiiSample {
  kind: 'email' | 'phone';
  /** The exact text that must not survive. */
  pii: string;
  text: string;
}

const at = (kind: SecurityPiiSample['kind'], template: string, pii: string): SecurityPiiSample => ({ kind, pii, text: template.replace('{}', pii) });
const email = (template: string, pii: string) => at('email', template, pii);
const phone = (template: string, pii: string) => at('phone', template, pii);

export const SECURITY_PII_POSITIVES: SecurityPiiSample[] = [
  // Emails in odd forms.
  email('- [unread] Maria Gonzalez: new address is {} from Monday', 'maria.gonzalez@example.com'),
  email('alerts go to {} (plus-tag)', 'dev+alerts.prod@example.io'),
  email('forwarded by {} yesterday', 'it-desk@corp.mail.example.co.jp'),
  email('SHOUTING: {}', 'SUPPORT@EXAMPLE.NET'),
  email('Mixed {} case', 'Jane.Doe@Example.Org'),
  email('quoted local part {} works per RFC 5322', '"john smith"@example.com'),
  email('quoted with at {} too', '"very.unusual.@.unusual.com"@example.com'),
  email('hyphenated domain {}.', 'a.b-c@my-company.example'),
  email('digits in domain {}', 'ops@mail2.example.com'),
  email('Spanish {} replied', 'josé.núñez@correo.españa.es'),
  email('Russian {} replied', 'пользователь@пример.рф'),
  email('Chinese {} replied', '用户@例子.广告'),
  email('punycode {} replied', 'user@xn--bcher-kva.example'),
  email('long TLD {} replied', 'a@b.photography'),
  email('Jordan <{}> wrote', 'jordan@example.org'),
  email('[mail me](mailto:{}?subject=hi)', 'ops@example.com'),
  email('email:{}', 'ops@example.com'),
  email('write to {}.', 'ops@example.com'),
  email('list: {};', 'first@example.com'),
  email('obfuscated {} please', 'jane [at] example [dot] com'),
  email('obfuscated {} please', 'jane (at) example (dot) com'),
  email('obfuscated {} please', 'jane{at}example{dot}com'),
  email('obfuscated {} please', 'JANE [AT] EXAMPLE [DOT] COM'),
  email('obfuscated {} please', 'jane[at]example.com'),
  email('fullwidth {} from a Japanese note', 'tanaka＠example.jp'),
  email('underscored {} account', 'admin_ops@example.com'),
  email('apostrophe {} signed', "o'neil@example.ie"),
  email("trailing quote '{}'", 'sam@example.net'),
  email('in a URL https://example.com/unsub?e={}&t=1', 'lee@example.com'),
  email('numeric local {} account', '4155550100@sms.example.com'),
  // International phones, several countries and writing habits.
  phone('- 09:30 call with Tom {} re lease', '+44 7700 900123'),
  phone('Tom mobile {}', '07700 900123'),
  phone('UK with trunk {}', '+44 (0) 7700 900 123'),
  phone('NYC {}', '(212) 555-0199'),
  phone('NYC {}', '212-555-0199'),
  phone('NYC {}', '212.555.0199'),
  phone('toll free {}', '1-800-555-0199'),
  phone('NYC {}', '+1 212 555 0199'),
  phone('NYC {}', '1 (212) 555-0199'),
  phone('NYC dotted {}', '+1.212.555.0199'),
  phone('NYC en dashes {}', '212–555–0199'),
  phone('Berlin {}', '+49 30 901820'),
  phone('Berlin {}', '030 901820'),
  phone('German mobile {}', '+49 171 1234567'),
  phone('German mobile {}', '0171 1234567'),
  phone('Munich {}', '+49-89-636-48018'),
  phone('Paris {}', '+33 6 12 34 56 78'),
  phone('Madrid {}', '+34 912 345 678'),
  phone('Rome {}', '+39 06 6982 1234'),
  phone('Rome {}', '06 6982 1234'),
  phone('Amsterdam {}', '+31 20 123 4567'),
  phone('Amsterdam {}', '020-123 4567'),
  phone('Mumbai {}', '+91-98765-43210'),
  phone('Mumbai {}', '+91 22 2345 6789'),
  phone('Shanghai {}', '+86 138 0013 8000'),
  phone('mobile {}', '138 0013 8000'),
  phone('Tokyo {}', '03-1234-5678'),
  phone('Tokyo {}', '+81 90-1234-5678'),
  phone('Tokyo {}', '090-1234-5678'),
  phone('Sydney {}', '(02) 9876 5432'),
  phone('Sydney {}', '0412 345 678'),
  phone('Sydney {}', '+61 412 345 678'),
  phone('São Paulo {}', '+55 (11) 98765-4321'),
  phone('São Paulo {}', '(11) 98765-4321'),
  phone('Mexico City {}', '+52 55 1234 5678'),
  phone('Cape Town {}', '+27 21 123 4567'),
  phone('Cape Town {}', '021 123 4567'),
  phone('Moscow {}', '+7 (495) 123-45-67'),
  phone('Dublin {}', '+353 1 234 5678'),
  phone('Dublin {}', '087 123 4567'),
  phone('Singapore {}', '+65 6123 4567'),
  phone('Seoul {}', '+82 2-312-3456'),
  phone('Seoul {}', '010-1234-5678'),
  phone('Tel Aviv {}', '+972-3-123-4567'),
  phone('Zurich {}', '+41 44 668 18 00'),
  phone('Zurich {}', '044 668 18 00'),
  phone('Stockholm {}', '+46 8 123 456 78'),
  phone('E.164 {}', '+4915112345678'),
  phone('E.164 {}', '+33612345678'),
  phone('international prefix {}', '0049 30 901820'),
  phone('[call me](tel:{})', '+12125550199'),
  phone('phone: {}', '2125550199'),
  phone('Call {} after six', '555-0199'),
  phone('with extension {} ext. 42', '+1 212 555 0199'),
  phone('nbsp {}', '+33\u00a06\u00a012\u00a034\u00a056\u00a078'),
  phone('narrow nbsp {}', '+44\u202f20\u202f7946\u202f0958'),
  phone('- 14:00 dentist, {}', '(212) 555-0142'),
  phone('Priya ({}) confirmed', '+44 20 7946 0123'),
  phone('Berlin, German style {}', '030/901820'),
  phone('Handy {}', '0171/1234567'),
  phone('Tel.: {}', '+49 (0)30 901820'),
  phone('WhatsApp {}', '+34 612 34 56 78'),
  phone('Chicago {}', '312/555-0142'),
  phone('fullwidth digits {}', '＋８１ ３-１２３４-５６７８'),
  phone('fullwidth digits {}', '０３-１２３４-５６７８'),
];

/** Numeric and address-like text with no PII: each line must come through unchanged. */
export const SECURITY_PII_LOOK_ALIKES: string[] = [
  // Dates and times.
  'Due 2026-11-30, moved to 2026/12/04, or 04.12.2026 in German.',
  'Sprint 2026-11-30–2026-12-04 then 2026-12-07 – 2026-12-11.',
  'Logged 2026-11-30T14:00:00+05:30 and 20261130T140000Z.',
  'Week 2026-W48, day 334, quarter 2026-Q4.',
  'Standup 09:30–09:45, lunch 12:30, gym 18:00–19:15.',
  'Train at 14h30, back 2:30 pm, 07:05:59 on the clock.',
  'Born 1987-06-15, married 15/06/2015, moved 06/15/2019.',
  'Dates 1 2 2026 and 12 11 2026 in a table.',
  // Versions and builds.
  'Upgraded node 20.11.1 to 22.3.0; pnpm 9.1.4.',
  'Windows 10.0.19045.3693 and Chrome 120.0.6099.109.',
  'Release 4.2.1-beta.3 and v2026.11.30 tagged.',
  'Kernel 6.8.0-49-generic on Ubuntu 24.04.1.',
  // Ids inside URLs and links.
  'PR https://github.com/org/repo/pull/4155550100 merged.',
  'Order page https://example.com/orders/2125550199?ref=4155550100 loads.',
  'Video https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=120 saved.',
  'Map https://maps.example.com/@37.7749,-122.4194,12z pinned.',
  'Docs at www.example.com/item/020-7946-0958 updated.',
  'Issue link https://tracker.example.com/browse/OPS-2125550199 closed.',
  // Order, invoice and case numbers.
  'Order #112-3456789-1234567 arrived.',
  'order 2125550199 was refunded.',
  'PO 4500012345 approved by finance.',
  'ticket OPS-12345 and case 0123456789 are linked.',
  'tracking 1Z999AA10123456784 and tracking number 7946 0958 1234 5678.',
  'Invoice no. 2026-0042-17 paid.',
  'Confirmation 0207 9460 958 for the hotel.',
  'Booking ref 415 555 0100 at the front desk.',
  // Network addresses.
  'Router 192.168.1.254, DNS 10.0.0.1, api 172.16.254.1:8080.',
  'IPv6 2001:db8::1 and fe80::1ff:fe23:4567:890a.',
  'Ports 8080 and 5432 and 443 open.',
  // Money and quantities.
  'Budget $1,234,567.89 and € 12.500,00 and 1 234 567 €.',
  'Paid USD 2,125,550.19 and GBP 415.50.',
  'Population 8 336 817 and area 783.8 km².',
  'Ran 10,000 steps, 72.5 kg, 180 cm.',
  // Coordinates and maths.
  'Coordinates 37.7749, -122.4194 and -33.8688,151.2093.',
  'At 51.5074° N, 0.1278° W.',
  'Pi is 3.14159265358979 and 2^31-1 = 2147483647.',
  'Avogadro 6.022e23 and ratio 16:9 and 24/7 support.',
  // Book and product codes.
  'ISBN 978-0-306-40615-7 and ISBN-13: 978-3-16-148410-0.',
  'Old ISBN 0-306-40615-2 on the shelf.',
  'Card-shaped 4111 1111 1111 1111 stays (cards are not in scope).',
  'UUID 123e4567-e89b-12d3-a456-426614174000 in the log.',
  'Unix time 1732982400 and 1732982400123 ms.',
  'Flight BA 0283 from gate 12, seat 14C.',
  'Postcodes SW1A 1AA, 94105-1234, 75008 Paris, 10115 Berlin.',
  'Scores 3-2, 102-98, 21-18 then 2-0.',
  'Pages 120-135 and years 2020–2024.',
  'Hashtags #2125550199 and #ops stay.',
  // Email look-alikes.
  'Thanks @alex and @jordan-lee for the review.',
  'Retina assets icon@2x.png and hero@3x.webp exported.',
  'Installed @scope/pkg@2.0.0 and lodash@4.17.21.',
  'Remote git@github.com:org/repo.git cloned.',
  'Image node@sha256:0123abcd pulled.',
  'Login root@localhost worked.',
  'Decorator @app.route("/x") in the code.',
  'Meet @ 14:00, price @ $5.00.',
  'We met at home, dot com bubble stories.',
  'Placeholders [email] and [phone] stay.',
];
