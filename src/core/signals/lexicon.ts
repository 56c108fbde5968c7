/**
 * Word lists for the memory signals. The emotion lexicon is generic English feeling words
 * in their common inflections (no names, no topics); words are matched whole, so listing
 * `ache` never matches `cache` and nothing here is a prefix match. Stop-words are excluded
 * from recurring themes.
 */

export const EMOTION_WORDS: ReadonlySet<string> = new Set(
  `
  happy happier happiest happiness glad joy joyful joyous delighted delight cheerful contented
  excited exciting excitement thrilled elated ecstatic eager enthusiastic
  calm calmer calmed peaceful peace serene relaxed relieved relief
  grateful gratitude thankful appreciative blessed
  proud pride confident hopeful hope hoped optimistic inspired motivated energized
  love loved loving adore affection tender warmth
  sad sadder sadness unhappy gloomy miserable depressed depressing heartbroken heartache grief grieving
  grieve mourning lonely loneliness lonesome alone isolated homesick nostalgic wistful melancholy
  cry cried crying tears tearful
  anxious anxiety worried worry worrying worries nervous nerves uneasy restless tense tension
  afraid scared fear fearful frightened terrified panicked panicky dread dreading apprehensive
  stressed stressful overwhelmed overwhelming pressured swamped frazzled
  angry anger mad furious fuming irritated irritable irritation annoyed annoyance annoying
  frustrated frustrating frustration resentful resentment bitter hostile outraged
  ashamed shame embarrassed embarrassing guilty guilt regret regretful remorse humiliated
  jealous envious envy insecure inadequate worthless
  tired exhausted exhausting exhaustion drained weary fatigued numb
  bored boring confused stuck helpless hopeless powerless vulnerable
  hurt hurting ache aching pain painful upset upsetting disappointed disappointing disappointment
  shocked surprised stunned startled
  conflicted torn ambivalent uncertain doubtful unsure
  `
    .split(/\s+/)
    .filter((word) => word.length > 0),
);

export const STOP_WORDS: ReadonlySet<string> = new Set(
  `
  a about above after again against all almost also although always am among an and another any anyone
  anything are around as at away back be became because been before being below between both but by
  can cannot could did do does doing done down during each either else enough even ever every
  few for from further get gets getting got had has have having he her here hers herself him himself
  his how however i if in into is it its itself just keep keeps kept know knew least less let lets like
  made make makes many may me might mine more most much must my myself need needs never new next no nor
  not nothing now of off often on once one only onto or other others our ours ourselves out over own
  per perhaps quite rather really said same say says see seem seemed seems several shall she should
  since so some something sometimes still such than that the their theirs them themselves then there
  these they thing things this those though through thus to too toward towards under until up upon us
  very was way we well went were what whatever when where whether which while who whom whose why will
  with within without would yet you your yours yourself yourselves
  i'm i've i'd i'll it's that's there's don't didn't doesn't isn't wasn't can't won't couldn't
  shouldn't wouldn't let's we're they're you're
  today yesterday tomorrow tonight morning afternoon evening night day days week weeks month year
  time times hour hours minute minutes bit lot lots little big two three first last second
  felt feel feeling feels think thinking thought thoughts going goes gone come came coming want wanted
  take took taken put tell told ask asked note notes self okay ok yes yeah fine
  good great bad better best worse worst kind sort
  email phone
  `
    .split(/\s+/)
    .filter((word) => word.length > 0),
);
