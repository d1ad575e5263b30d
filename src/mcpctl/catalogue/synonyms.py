"""The words people use for what tools call otherwise, for the text search ranks (no I/O, no model).

`SYNONYMS`: each pattern that matches a request adds the tools' words to the text that is ranked
("folder" -> "directory", "how big is" -> "size metadata", a fact about a named person -> "memory
knowledge entities"); `PART_OF_FILE_WORDS`: a part of a file named (its lines, to edit). Split from
`intent.py`, which applies them (`_expanded`); the passes that chose each are in docs/ranking.md.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["PARTS_WORDS", "PART_OF_FILE_WORDS", "SYNONYMS", "UNITS_PATTERN"]

# Units of measure named by their usual words ("26.2 miles", "180 pounds"): a request naming two is
# a conversion.
_UNIT: Final = (
    r"\b(?:miles?|kilomet(?:er|re)s?|km|met(?:er|re)s?|feet|foot|inch(?:es)?|yards?|centimet(?:er|re)s?|cm|mm|"
    r"pounds?|lbs?|kilos?|kilograms?|kg|grams?|ounces?|oz|stones?|tonnes?|tons?|litres?|liters?|gallons?|"
    r"pints?|cups?|fahrenheit|celsius|kelvin|degrees|gigabytes?|megabytes?|kilobytes?|terabytes?|gb|mb|kb|tb|"
    r"bytes?|bits?|mph|knots?)\b")
UNITS_PATTERN: Final = f"{_UNIT}.{{0,60}}{_UNIT}"
# Words people use for what tools call otherwise: a match adds the tools' words to the ranked text.
# Every gap between two parts of a pattern is bounded ({0,60}): an unbounded one is quadratic in
# the request's length (a 50,000-character search_tools query took 19 s).
SYNONYMS: Final = tuple((re.compile(p, re.I), words) for p, words in (
    (r"\bfolders?\b", "directory"),
    (r"\b(?:photos?|pictures?|pics?|screenshots?|images?)\b", "image"),
    (r"\b(?:articles?|web ?pages?|websites?|online|on the web|internet)\b", "web page url internet"),
    (r"\b(?:you (?:know|remember|stored|saved|memori[sz]ed|have on|got)|your memory|told you|tell you|"
     r"you(?:'ve| have) (?:memori[sz]ed|stored|saved|kept|got))\b", "memory knowledge"),
    # a fact about a person, or the person ("remember that Jonas is my dentist", "erase Rafael"): the
    # knowledge of entities, not a note (the name capitalised)
    (r"\b(?:remember|note|record|store|save|log|know|keep in mind)(?: that)?:? (?-i:[A-Z][a-z]+)(?:'s(?: \w+)?)? (?:is|was|has|had|likes|"
     r"loves|hates|lives|works|prefers|speaks|moved|owns|knows|plays|studies|started|joined|left|quit)\b", "memory knowledge entities"),
    (r"\b(?:erase|delete|remove|forget|drop|wipe) (?-i:[A-Z][a-z]+)\b(?! \d)", "entities"),
    (r"\b(?:save|add|create|record|store|remember|make) (?:a )?(?:new )?(?:contacts?|persons?|people|friends?|colleagues?|"
     r"acquaintances?)\b", "entities entity person create"),
    (r"\b(?:where is|where's|where are|locate|somewhere|anywhere|look(?:ing)? for|hunt(?:ing)? for)\b",
     "search find"),
    (r"\b(?:relationships?|links? between|connections? between|related to)\b", "relation relations"),
    (r"\b(?:right now|now|currently|at the moment)\b|^\W*what(?: time is it|'s the time| hour is it)\b", "current"),
    (r"\b(?:nested|recursive(?:ly)?|hierarchy|structure|tree)\b", "tree recursive"),
    (r"\b(?:how much space|biggest|largest|smallest|heaviest)\b", "sizes size"),
    # one thing's size or kind ("how large is video.mp4", "is backup.tar a file or a folder"): its metadata
    (r"\bhow (?:big|large|heavy) (?:is|was)\b|\bwhat size is\b|\bwhat(?:'s| is) the size\b|\bhow old is (?:the |this |my )?(?:\w+ )?file\b|\bsize of\b|\ba file or (?:a )?(?:folder|directory)\b"
     r"|\bhow many (?:bytes|kilobytes|megabytes|gigabytes|kb|mb|gb)\b|\b(?:size|dates?) (?:and \w+ )?of file\b",
     "size metadata information"),
    (r"\bpermitted\b|\bhave access\b|\bable to (?:read|access|see)\b|\blets? (?:me|you|us) (?:use|access|touch)\b",
     "allowed access"),
    (r"^\W*(?:please )?(?:cat|dump)\s", "contents read"),
    (r"\bjot(?:ted)?\b", "note"),
    (r"\b(?:don't|do not|never) (?:forget|lose)\b|\b(?:keep|bear) in mind\b", "remember memory"),
    (r"\d\s*(?:times|multiplied by|x|\*|\u00d7)\s*\d", "multiply product"),
    # one kept already, known by what it is about ("the note about the trip"; not "a note about ...")
    (r"\b(?:the|my|any|which) (?:notes?|files?|entries|entry|documents?) (?:about|regarding|on the subject of|where|"
     r"in which|that (?:says?|has|had|mentions?|contains?))\b|\b(?:anything|something) (?:about|on|regarding)\b",
     "search matching"),
    # (not "contains": on MetaTool dev, "a recipe that contains chicken" asks no search tool)
    (r"\b(?:mentions?|mentioning)\b|\bany \w+ (?:about|that mentions?)\b", "search matching"),
    (r"\bwhat (?:does|do|did) .{1,60}? say\b|\b(?:contents|text) of\b(?!(?: \S+){0,3} (?:directory|folder|dir)\b)"
     r"|\bopen(?: up)? (?:the |my |this )?(?:\w+ ){0,2}file\b", "contents read"),
    (r"\b(?:contents?|inside) of (?:the |my |this )?(?:\S+ ){0,2}(?:directory|folder|dir)\b"
     r"|\bwhat(?:'s| is) in(?:side)? (?:the |my |this )?(?:\S+ ){0,2}(?:directory|folder|dir)\b", "list directory listing"),
    (r"\b(?:put|drop|stick|relocate|transfer)\b.{1,60}\b(?:into|in|under|to)\b.{0,20}\b(?:folder|directory)\b", "move"),
    (UNITS_PATTERN, "convert units"),
    (r"\bwhen (?:was|were|did|is)\b.{0,60}\b(?:creat|chang|modif|edit|updat|made|writ|touch)\w*"
     r"|\blast (?:chang|modif|edit|updat|touch)\w*|\bpermissions\b", "modified creation time metadata"),
    (r"\b(?:is it|it's|its) (?:already |still )?(?:past )?(?:morning|evening|night|afternoon|midnight|late|early)\b",
     "current time"),
    (r"\b(?:entirely|completely|altogether|for good|everything (?:about|on)|all (?:about|on)|"
     r"what you (?:stored|know|saved|remember|have) (?:about|on))\b", "entities whole"),
    (r"\bfacts?\b", "observations"),
    # shell words for what a tool does ("ls ~/projects", "mkdir backups", "mv a.txt b.txt")
    (r"^\W*(?:please )?ls\b", "list directory listing"),
    # the sixth pass (tuning_requests_5)
    (r"\b(?:replace|overwrite)\s+(?:everything|all|the whole|the entire)\b|\bwhole file\b", "overwrite write"),
    (r"\b(?:connect|link|relate|tie)\s+(?:the\s+)?(?:entity|entities|node|nodes)\b", "relation relations"),
    (r"^\W*who\b(?:(?! about).){0,40}\b(?:is|are) (?:a|an)\s", "search matching"),     # not "my friend who is a ..."
    (r"(?-i:[A-Z][a-z]+)'s (?:entry|node|entity)\b", "memory observations entities"),
    (r"\b(?:all|every)(?: of)? (?:my |the |your )?notes?\b", "list"),
    # the seventh pass (tuning_requests_6)
    (r"\bmy (?:manager|boss|sister|brother|mother|mom|mum|father|dad|wife|husband|partner|friend|colleague|"
     r"neighbou?r|doctor|dentist|landlord|son|daughter|cousin|aunt|uncle|teacher|coach|mentor)(?:'s \w+)? "
     r"(?:is|was) (?:called|named)\b", "memory knowledge entities"),
    (r"\b(?:every|all)(?: the)? (?:entit(?:y|ies)|nodes?|relations?)\b", "read graph entire"),
    (r"\bfind (?:people|anyone|someone|everyone|persons?|entities|nodes)\b", "search matching"),
    (r"(?<!\bdid i )(?<!\bever )(?<!\bhave i )\b(?:take|make|write|leave) (?:a |me a )?note\b(?! in (?:your |my |the )?memory|(?: of (?:that|this|the) (?:connection|link|relationship|tie)))", "note create"),
    (r"\bhow spread out\b|\b(?:variance|deviation|spread) of (?:these|the|this|my) (?:numbers|values|scores|data|list)\b",
     "statistics variance deviation"),
    (r"^\W*(?:please )?mkdir\b", "create directory"),
    (r"^\W*(?:please )?mv\b", "move rename"),
    # whether files of a kind are somewhere ("are there any png images in assets")
    (r"\b(?:are there|is there|do (?:i|we) have)\s+(?:any|an?)\s+(?:\S+\s+){0,2}(?:files?|images?|photos?|"
     r"pictures?|folders?|directories|documents?)\b", "search find"),
    (r"\burl[- ](?:friendly|safe)\b|\bslugify\b|\b(?:a|into a|as a) slug\b", "slug slugify url"),
    # one text for another inside a file ("swap 'localhost' for '0.0.0.0' in config.yaml"): an edit of its lines
    (r"\b(?:swap|replace|substitute|change)\b.{1,60}\b(?:for|with|to|by|into)\b.{1,60}\b(?:in|inside|within) "
     r"(?:the )?(?:\w+ ){0,3}file\b", "edit lines"),
    # a fact that stopped being true ("Priya no longer has a cat, update your memory"): an observation
    (r"\b(?:no longer|(?:n't|not)\b.{0,60}\b(?:anymore|any more))\b.{0,60}\b(?:memory|what you know|you remember)\b",
     "observations"),
    (r"\bask (?:the|a|an) (?:model|llm|language model)\b", "sampling llm"),
    # the eighth pass (tuning_requests_7)
    (r"\bsub-?(?:folders|directories) included\b|\b(?:including|with|and) (?:all |their |its )?(?:the )?sub-?(?:folders|directories)\b"
     r"|\b(?:laid out|all the way down|(?:all|every) (?:the )?levels)\b", "tree recursive"),
    (r"^\W*(?:please )?file\b.{0,60}\baway\b|\bshift\b.{1,60}\b(?:into|in|under|to)\b.{0,20}\b(?:folder|directory)\b",
     "move"),
    (r"\btrack(?:ing)? down\b|\bfiles? (?:ending|that ends?) (?:in|with)\b|\bfiles? whose names?\b", "search find"),
    (r"\bis (?:the |this |my )?(?:\w+ )?file \w+ (?:bigger|larger|smaller|heavier) than\b", "size metadata information"),
    (r"\bas a new (?:contact|person|entity|friend|colleague)\b", "entities entity person create"),
    (r"\b(?:track(?:ing)?|add|create|record|store|save|remember|keep) (?:a |an )?(?:new )?(?:project|company|team|"
     r"organi[sz]ation|product) (?:called|named) (?-i:[A-Z])", "entities entity create"),
    (r"\bshould (?:be )?(?:called|named|renamed)\b", "rename"),
    (r"\b(?:on|in|from|under) my (?-i:Desktop|Downloads|Documents)\b|\bmy (?:desktop|downloads|documents|home) (?:folder|directory)\b",
     "directory"),
    (r"\b(?:link|tie|connect|relate|associate) (?-i:[A-Z][a-z]+) (?:to|with|and) (?:the )?(?-i:[A-Z][a-z]+)\b", "relation relations"),
    # a fact about one already known, told by its pronoun ("put on Marco's record that he moved to Lyon")
    (r"\bthat (?:he|she|they)(?:'s| is| are| was| has| have| had| likes?| loves?| lives?| works?| prefers?| moved| owns?"
     r"| speaks?| plays?)\b|\bthe (?:bit|part|detail) about\b", "observations"),
    (r"\b(?:did|have|had) (?:i|we) (?:ever )?(?:make|made|write|written|wrote|take|taken|took|jot|jotted|leave|left) "
     r"(?:a |any )?notes?\b", "search matching"),
    (r"\b(?:when|what time) is that\b|\bwhat(?:'s| is) that in\b", "convert"),
    (r"\b(?:under|over|within|more than|less than|fewer than) \d+ (?:characters|chars|words|letters)\b", "count characters words"),
    (r"\bcompletion from (?:my|the|your) (?:llm|model|language model)\b", "sampling llm"),
    (r"\d\s*(?:plus|\+)\s*\d", "add sum"),
    (r"\b(?:anything|something) (?:stored|saved|kept) (?:on|about)\b", "search matching"),
    (r"\bopen to (?:you|me|us)\b", "allowed access"),
    (r"\b(?:store|save|record|remember|keep) (?:that|this|the) (?:connection|link|relationship|tie)\b", "relation relations"),
    (r"\boverview of (?:my|the|all|your) notes\b", "list"),
    (r"\brepeat after me\b|\bsay (?:it |this |that )?back\b", "echo"),
    # the ninth pass (tuning_requests_8)
    (r"\bwho owns (?:\S+ ){0,2}(?:file|directory)\b|\bowner and (?:mode|permissions|group)\b|\bmode bits\b|\bwhat mode\b|\bfile mode\b|\bchmod\b",
     "permissions metadata information"),
    (r"\bhow (?:is|are) (?:the |my |this )?(?:\S+ )?(?:directory|folder|files|repo|codebase|project) organi[sz]ed\b|\bfolders (?:inside|within|in) (?:other )?folders\b", "tree recursive"),
    (r"\bbelongs? (?:in|under|inside)\b", "move"),
    (r"\bhunt(?:ing)? (?:through|around)\b|\bwhere (?:did|have|had|do) (?:i|we) (?:\w+ )?(?:put|save|saved|leave|left|"
     r"store|stored|keep|kept)\b", "search find"),
    (r"\b(?:paths|directories|folders|places) (?:that )?you can (?:reach|access|get to|touch)\b|\boff limits\b|\b(?:given|gave) you access\b", "allowed access"),
    (r"\bmy new (?:coworker|co-worker|colleague|roommate|flatmate|classmate|teammate|neighbou?r|manager|boss|assistant|"
     r"doctor|dentist|accountant|lawyer) (?:is|was) (?:called|named)\b", "memory knowledge entities"),
    (r"(?-i:[A-Z][a-z]+) (?:depends on|reports to|works for|is married to|is part of|belongs to|manages|mentors) "
     r"(?:the )?(?-i:[A-Z][a-z]+)|\bhow (?:the two of them|they|both of them|the two) are (?:linked|connected|related)\b",
     "relation relations"),
    (r"\b(?:anyone|anybody) (?:you know|you(?:'ve| have) met|in your memory)\b", "search matching"),
    (r"\bwhat you (?:know|remember) of\b", "entities whole"),
    (r"\bdeep dive\b|\bdeep research\b", "research"),
    (r"\b(?:did|have|had) (?:i|we) (?:ever )?(?:put|save|saved|write|written|wrote|store|stored|keep|kept) "
     r"(?:it|that|this|them) (?:in|into|down in) (?:a |any |my )?notes?\b", "search matching"),
    (r"\bneeds? (?:the|a|an) (?:\S+ )?tags?\b", "update tags"),
    (r"\d(?:\.\d+)?\s*,\s*\d+(?:\.\d+)?\s*,\s*\d+(?:\.\d+)?(?:\s*,\s*|\s+and\s+)\d", "statistics numbers list"),
    (r"\bwhat(?:'s| has)? changed between\b|\bchanges between\b"
     # (the tenth pass) "here's the old clause and the new one, line up the differences for me"
     r"|\b(?:line up|spot|show me|mark|highlight) the differences\b", "diff compare"),
    (r"\b(?:has|have) (?:anyone|anybody|someone|somebody) (?:modified|changed|edited|touched)\b", "modified time metadata"),
    (r"\b(?:call|name) (?:it|this|that|the file) (?:\S+ )?file\b|\b(?:call|name) (?:it|this|that) ['\"]", "rename"),    # the eleventh pass (tuning_requests_10)
    (r"\b(?:his|her|their) (?:entry|entries|record|node)\b", "memory observations entities"),
    (r"\b(?:that|this|it) about (?:him|her|them)\b", "memory observations entities"),
    (r"\btake (?-i:[A-Z][a-z]+) (?:out of|off|from)\b", "entities"),
    (r"\b(?:outside|within|beyond|out of) (?:your|the server's) reach\b", "allowed access"),
    (r"\b(?:modified|modification|creation|change) (?:date|time)\b|\bbeen (?:touched|modified|changed|edited) since\b",
     "modified time metadata"),
    (r"\bshould (?:carry|have|get|bear) (?:the|a|an) (?:\S+ )?tags?\b", "update tags"),
    (r"\benv(?:ironment)? vars?\b", "environment variables"),
    (r"\b(?:pop up|show me|bring up|give me|open) a form\b|\ba form (?:asking|that asks|to fill)\b", "elicitation request user input"),
    (r"\bjust the titles\b|\bwhat (?:have i got|do i have|is|'s) in my notes\b", "list"),
    (r"\bwith ['\"]?[\w.\-]+['\"]? in (?:its|their|the) (?:file ?)?names?\b", "search find files"),
    (r"\b(?:note|make a note of|note down) (?:that|this|the) (?:connection|link|relationship|tie)\b", "relation relations"),
    (r"\b(?:keep in mind|remember|note|know|record)(?: that)? there(?:'s| is) (?:a|an) (?:new )?(?:project|company|team|"
     r"organi[sz]ation|product) (?:called|named) (?-i:[A-Z])", "entities entity create"),
    (r"(?-i:[A-Z][a-z]+) (?:doesn't|does not|no longer|isn't|is not)\b.{0,20}\b(?:with|for|to) (?-i:[A-Z][a-z]+)\b",
     "relation relations"),
    (r"\b(?:is|are) (?:a |my )?new (?:colleague|coworker|co-worker|friend|neighbou?r|teammate|flatmate|roommate|classmate|"
     r"client|hire)s?\b|\bmeet my (?:\w+ )?new\b", "entities entity person create"),
    (r"\bwho do you know (?:that|who|with)\b|\b(?:anyone|anybody|someone|somebody) (?:called|named)\b", "search matching"),
    (r"(?-i:[A-Z][a-z]+)(?:'s)? and (?-i:[A-Z][a-z]+)(?:'s)? (?:records|entries|nodes)\b"
     r"|\b(?:records|entries|nodes) (?:for|of|on) (?-i:[A-Z][a-z]+) and (?-i:[A-Z][a-z]+)\b", "open nodes names"),
    (r"\bextract\b.{0,40}\bfrom (?:this|the following|my|that) (?:text|paragraph|string|sentence|passage|snippet)\b",
     "regex match"),
    (r"\bwhat(?:'s| is) the time (?:there|over there)\b", "current"),
    (r"\bwhat(?:'s| is) that on the clock\b", "convert"),
    # two people and what they are to each other ("Sara and Ben are no longer married, drop that link")
    (r"(?-i:[A-Z][a-z]+) and (?-i:[A-Z][a-z]+) are (?:no longer |not |now )?(?:married|siblings|brothers|sisters|friends|"
     r"colleagues|coworkers|partners|cousins|neighbou?rs|dating|engaged|related)\b"
     r"|\b(?:drop|remove|delete|cut|undo|forget|erase) (?:that|this|the) (?:link|connection|relationship|tie)\b",
     "relation relations"),
    (r"\b(?:through|with|via|using|in) (?:a|an) (?:\w+ )?form\b", "elicitation request user input"),
    (r"\b(?:what|which) notes (?:do|have|did) (?:i|we) (?:have|got|written|write|made)\b|\bmy (?:latest|recent|newest) notes\b",
     "list"),
    (r"\bwho(?:'s| is| was) (?-i:[A-Z][a-z]+) again\b", "memory knowledge search matching"),
    (r"\b(?:the )?client's (?:model|llm)\b", "sampling llm"),
    (r"\b(?:am i|are we) (?:able|allowed|permitted) to (?:work|write|read|access|touch|edit|save)\b", "allowed access"),
    (r"\b(?:extract|pull|pick)\b.{0,40}\b(?:out of|from) (?:this|the following|that) (?:text|paragraph|string|sentence|"
     r"passage|snippet)\b", "regex match"),
    # a person introduced, then the verb ("Priya is my sister, remember that"; not a known one's news:
    # "Nina switched jobs to Globex, record that" adds to her, pr-039 1 -> 2 with hybrid)
    (r"^\W*(?-i:[A-Z][a-z]+) is (?:my|our) \w+\b.{0,60}\b(?:remember|record|note|store|keep|save) (?:that|this|it)\b",
     "memory knowledge entities"),
    # the twelfth pass (tuning_requests_11)
    (r"\b(?:update|add to|correct|fix) what you (?:know|remember|have|stored) (?:about|on|of)\b"
     r"|(?-i:[A-Z][a-z]+)'s (?:new |current |latest )?(?:phone |mobile |cell )?(?:number|address|email|job|title|role|"
     r"employer|birthday|surname|nickname) is\b", "observations"),
    (r"\beverything (?:you (?:know|remember|have|stored|saved|kept|got)) (?:about|on)\b", "entities whole"),
    (r"\b(?:add|save|store|record|keep|remember|create|put|enter)\b.{0,40}\bas (?:a |an )?(?:new )?(?:people|persons?|"
     r"contacts?|entit(?:y|ies)|friends|colleagues)\b",
     "entities entity person create"),
    (r"(?-i:[A-Z][a-z]+) (?:manages|leads|runs|heads|owns|works (?:on|in|at|for)|reports to|belongs to|is part of) "
     r"(?:the |our |their )(?:\w+ )?(?:team|department|group|squad|project|division)\b", "relation relations"),
    (r"\b(?:nodes?|entit(?:y|ies)) (?:named|called)\b", "open nodes names"),
    (r"\b(?:add|append|attach)\b.{0,30}\bto (?:the |his |her |their |its )?(?:\w+ ){0,2}(?:entity|node)\b",
     "observations"),
    (r"\bwhat(?:'s| is) the (?:clock|hour) (?:there|over there)\b|\b(?:be|is (?:she|he|it)|are (?:they|you)) "
     r"(?:still |already )?(?:asleep|awake)\b|\bexact time\b", "current time"),
    (r"\bnotes (?:\S+ ){0,4}(?:labell?ed|tagged|with (?:the |a )?(?:tag|label))\b", "list tag"),     # (not "a note tagged")
    (r"\b(?:did|have|had) (?:i|we) (?:ever )?(?:write|written|wrote|jot|jotted|note|noted|put|save|saved) "
     r"(?:anything|something|stuff) (?:down )?(?:about|on|regarding)\b", "search matching notes"),
    (r"\b(?:the|a|its|new|bad|wrong|different) heading\b|\bheading ['\"]", "title"),
    (r"\bstd ?dev\b|\bstdev\b|(?<![\d.:/-])\d+(?:\.\d+)?(?:\s+\d+(?:\.\d+)?){3,}(?![\d.:/-])", "statistics numbers list"),
    (r"\bpermalinks?\b", "slug slugify url"),
    (r"^\W*(?:please |pls )?jot (?:this |that |it |these )?down\b", "create"),
    (r"\bhow many (?:lines|words|characters|chars|sentences|paragraphs|letters)\b", "count words characters"),
    (r"\bbounce\b.{0,30}\bback\b", "echo"),
    (r"\blines?\b.{0,40}\b(?:start|begin|end)s? with\b|\blines? matching\b", "regex match"),
    (r"\btakes? a (?:long )?while\b", "long running"),
    (r"\bask (?:me|the user|us|you|them) (?:for )?(?:a |some )?(?:question|questions|something|input)\b", "elicitation request user input"),
    (r"\b(?:server|process|shell|container|runtime)(?:'s)? environment\b", "environment variables"),
    (r"\bwhat (?:the |my |this )?(?:\S+ )?file \w+ (?:says|said)\b", "contents read"),     # "what config.yaml says"
))
# a part of a file named ("the typo in intro.md", "the import of os from script.py"): its lines, to
# edit (not when the request reads them: "the last 20 lines of error.log")
_PARTS: Final = r"\b(?:lines?|typos?|imports?|paragraphs?|sentences?|headings?|headers?|comments?|functions?|words?|statements?|version(?: number)?)\b"
# (or the file first: "in worker.py, rename the function process to handle")
PART_OF_FILE_WORDS: Final = re.compile(
    rf"{_PARTS}.{{0,60}}\b(?:of|from|in|into|to) (?:the )?(?:\w+ ){{0,3}}file\b"
    rf"|^\W*(?:in|inside|within) (?:the )?file\b.{{0,60}}{_PARTS}", re.I)
# (the ninth pass) the parts of a file a change names wherever the file is ("the README says 'instal', correct
# that typo"; not a version or a header: "replace the whole of config.ini with the version below")
PARTS_WORDS: Final = re.compile(r"\b(?:lines?|typos?|imports?|paragraphs?|sentences?|functions?|comments?|words?)\b", re.I)
