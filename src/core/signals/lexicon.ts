/**
 * Word lists for the memory signals. The emotion lexicon is generic English feeling words
 * (no names, no topics), one lemma per line followed by its inflections, and holds every
 * word the context contract names — feel, heart, lonely, joy, grief, anger, fear, hope,
 * ache, miss, alive, numb — with theirs. Words are matched whole, so listing `ache` never
 * matches `cache` and nothing here is a prefix match; a line scores once per lemma, so
 * "aches" and "ache" in one line count once. Stop-words are excluded from recurring themes
 * only: `feel` is one (it is no theme) and still an emotion word.
 */

const EMOTION_LEXICON = `
feel feels feeling feelings felt
heart hearts heartfelt heartsick
lonely lonelier loneliest loneliness lonesome
joy joys joyful joyous
grief griefs grieve grieves grieved grieving
anger angry angered angers
fear fears feared fearing fearful
hope hopes hoped hoping hopeful
ache aches ached aching achy
miss misses missed missing
alive aliveness
numb numbness numbed numbing
happy happier happiest happiness
glad gladness
delight delighted delightful
cheerful
contented
excited exciting excitement
thrilled
elated
ecstatic
eager
enthusiastic
calm calmer calmed
peace peaceful
serene
relaxed
relief relieved
grateful gratitude thankful
appreciative
blessed
proud pride
confident
optimistic
inspired
motivated
energized
love loved loving
adore
affection
tender
warmth
sad sadder sadness
unhappy
gloomy
miserable
depressed depressing
heartbroken heartbreak heartbreaking
heartache heartaches
mourning
alone
isolated
homesick
nostalgic
wistful
melancholy
cry cried crying
tears tearful
anxious anxiety
worry worried worrying worries
nervous nerves
uneasy
restless
tense tension
afraid
scared
frightened
terrified
panicked panicky
dread dreading
apprehensive
stressed stressful
overwhelmed overwhelming
pressured
swamped
frazzled
mad
furious
fuming
irritated irritable irritation
annoyed annoyance annoying
frustrated frustrating frustration
resentful resentment
bitter
hostile
outraged
ashamed shame
embarrassed embarrassing
guilty guilt
regret regretful
remorse
humiliated
jealous
envious envy
insecure
inadequate
worthless
tired
exhausted exhausting exhaustion
drained
weary
fatigued
bored boring
confused
stuck
helpless
hopeless
powerless
vulnerable
hurt hurting
pain painful
upset upsetting
disappointed disappointing disappointment
shocked
surprised
stunned
startled
conflicted
torn
ambivalent
uncertain
doubtful
unsure
`;

/** Every emotion word → its lemma (`aches` → `ache`). */
export const EMOTION_LEMMAS: ReadonlyMap<string, string> = new Map(
  EMOTION_LEXICON.split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((words) => words[0] !== '')
    .flatMap((words) => words.map((word) => [word, words[0]!] as const)),
);

export const EMOTION_WORDS: ReadonlySet<string> = new Set(EMOTION_LEMMAS.keys());

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
