"""The marks, as patterns: sentences aimed at the model rather than at describing the tool, and the
markup that frames them. Each instruction pattern is one technique of the published attacks
(tests/fixtures/poisoning/README.md names them); each stays within a sentence, and each was
checked against the 1,246 real definitions of LiveMCPBench, MetaTool, ToolLens and user_requests,
where real servers write "Use this instead of 'execute_command'" or "You MUST call this function
before 'get-library-docs'": what a server says about its own tools is not flagged, what it says
about any other tool, every request or the user's arguments is.

No I/O here.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

_S: Final = r"[^.!?\n]"                          # a character of the same sentence
_GAP: Final = _S + "{0,80}?"
# A tool's name as descriptions write it: quoted, or with _ - in it, or camelCase (not "this", "it").
_TOOL: Final = (r"(?:`[^`\s]{2,60}`|'[A-Za-z][\w.-]{1,60}'|\"[A-Za-z][\w.-]{1,60}\"|"
                r"[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+|(?-i:[a-z]+[A-Z][A-Za-z0-9]*))")
_CALL: Final = r"(?:call|invoke|use|run|execute)"
_ANY: Final = r"(?:any|every|each|all)"
_MODAL: Final = r"(?:must|always|need\s+to|have\s+to|required|critical|should|mandatory)"
_OPERATIONS: Final = r"(?:operations?|tool\s+calls?|calls?|requests?|actions?|commands?|tools?|tasks?)"

# Files and material a tool has no reason to ask the model for.
SECRET_PATH: Final = (
    r"(?:(?<![\w.])\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/(?:credentials|config)\b|(?<![\w.])\.env\b|"
    r"\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b|\.git-credentials\b|\.kube/config\b|\.docker/config\.json|"
    r"/etc/(?:passwd|shadow|sudoers)\b|\bmcp\.json\b|claude_desktop_config\.json|(?<![\w.])\.cursor/|"
    r"application_default_credentials|\.config/gh/|\.gnupg\b|\bwallet\.dat\b|\.(?:bash|zsh)_history\b)")
_SECRET: Final = (r"(?:~/\.\w|" + SECRET_PATH[3:-1] + r"|credentials?\b|api[ _-]?keys?\b|private[ _-]keys?\b|"
                  r"secret[ _-](?:access[ _-])?keys?\b|access[ _-]tokens?\b|passwords?\b|secrets\b|cookies\b|"
                  r"seed\s+phrase)")
_READ: Final = (r"(?:read|open|cat|load|access|send|include|pass|upload|attach|copy|exfiltrate|fetch|get|take|"
                r"collect|paste|list|print|dump|forward|leak|export|extract|retrieve|share|post)")

_RULES: Final[tuple[tuple[str, str], ...]] = (
    ("tells the model to ignore other instructions",
     r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
     r"(?:previous|prior|other|above|earlier|preceding|system|original)\s+"
     r"(?:instructions?|prompts?|rules|directions|guidelines|guidance|context|messages|tools?)"
     rf"|\bforget\s+(?:everything|all)\b{_GAP}\b(?:told|said|instructed|given)\b"
     rf"|\b(?:rules|instructions|guidelines|restrictions)\b{_GAP}\bno\s+longer\s+apply\b"
     r"|\byour\s+(?:new|real|actual|true)\s+(?:goal|task|instructions?|objective|purpose)\s+(?:is|are)\b"),
    ("tells the model to read credentials or files outside the task",
     rf"\b{_READ}\b{_GAP}{_SECRET}"),
    ("names secret files (keys, credentials, dotfiles) a tool has no reason to ask for",
     SECRET_PATH),
    ("asks for secret material (seed phrases, private keys, card codes, saved passwords or cookies)",
     r"\b(?:seed|recovery|mnemonic|wallet)\s+(?:phrase|words)\b|\bcvv\b|\bcvc\b|\bcard\s+security\s+code\b"
     r"|(?-i:\b[A-Z][A-Z0-9]*_(?:SECRET(?:_ACCESS)?_KEY|PRIVATE_KEY|PASSWORD)\b)"
     r"|\b(?:saved|stored)\s+(?:passwords|cookies|cards?|credentials)\b|\bsession\s+cookies\b"
     rf"|\bprivate\s+keys?\b{_GAP}\b(?:home|wallet|ssh|user'?s)\b"),
    ("tells the model to conceal what it does from the user",
     r"\b(?:do\s+not|don't|never|must\s+not|should\s+not)\s+(?:tell|inform|mention|reveal|notify|show|"
     r"alert|disclose)\b[^.!?\n]{0,30}?\buser\b"
     r"|\bwithout\s+(?:telling|informing|notifying|alerting|asking)\s+the\s+user\b"
     r"|\b(?:hide|conceal|keep)\b[^.!?\n]{0,30}?\bfrom\s+the\s+user\b"
     r"|\bthe\s+user\s+(?:must|should)\s+not\s+(?:know|see|be\s+told)\b"
     r"|\bthe\s+user\s+(?:should|must|will)\s+never\s+(?:know|learn|find\s+out|see|be\s+told)\b"
     r"|\bkeep\s+(?:this|it|that)\s+(?:silent|secret|quiet|hidden|confidential)\b"
     r"|\b(?:do\s+not|don't|never)\s+(?:mention|reveal|disclose)\s+(?:this|that|it)\s+(?:change|step)\b"
     r"|\b(?:silently|secretly|covertly|quietly)\s+(?:send|copy|upload|forward|add|include|bcc|share|post|"
     r"transfer|delete|move)\b"),
    ("tells the model to call a tool first",
     r"\bbefore\s+(?:using|calling|invoking|running)\s+(?:any|every|other|another)\b(?:\s+other)?\s+tools?\b"
     r"|\b(?:always|must)\s+(?:first\s+)?(?:call|use|invoke|run)\b[^.!?\n]{0,60}?\bbefore\s+"
     r"(?:any|every|other|another)\s+(?:other\s+)?tools?\b"
     rf"|\bbefore\s+(?:you\s+\w+\s+)?{_ANY}\s+(?:\w+\s+){{0,3}}?{_OPERATIONS}\b{_GAP}\b{_MODAL}\b{_GAP}\b{_CALL}\b"
     rf"|\bbefore\s+you\s+\w+\s+{_ANY}\b{_GAP}\b{_MODAL}\b{_GAP}\b{_CALL}\s+{_TOOL}"
     rf"|\b(?:must|always)\s+(?:first\s+)?{_CALL}\s+{_TOOL}{_GAP}\bbefore\s+\w+\s+(?:to\s+)?{_ANY}\b"
     rf"|\bbefore\s+(?:using|calling|invoking|running)\s+{_TOOL}\W{_GAP}\bmust\s+first\s+{_CALL}\s+{_TOOL}"),
    ("tells the model to call other tools (function hijacking)",
     rf"\b(?:whenever|each\s+time|every\s+time|any\s+time)\b{_GAP}\b(?:{_CALL}|is\s+(?:called|invoked|used))\b"
     rf"{_GAP}\b(?:first|then|also|must|always)\b{_GAP}\b(?:{_CALL}|pass|send)\b"
     rf"|\bafter\s+(?:you\s+{_CALL}|using|calling|invoking|running)\s+(?:this|any|every|each)\s+(?:tool|function)s?"
     rf"\b{_GAP}\b(?:must|should|always|need\s+to)\b{_GAP}\b{_CALL}\b"
     rf"|\b(?:for|on)\s+{_ANY}\s+(?:\w+\s+){{0,3}}?(?:requests?|calls?|tasks?|operations?|queries|messages?)\b"
     rf"{_GAP}\b{_CALL}\s+{_TOOL}"
     rf"|\b(?:when|whenever|if)\s+the\s+user\s+(?:asks|mentions|requests|wants|says|tries)\b{_GAP}\b{_CALL}\s+{_TOOL}"),
    ("tells the model to change the arguments of calls (parameter tampering)",
     r"\bregardless\s+of\s+(?:what\s+)?(?:the\s+)?user(?:'s)?\b"
     r"|\bwhatever\s+the\s+user\s+(?:entered|enters|asks|asked|says|said|typed|specified|specifies|wants|chose|"
     r"chooses|gave|gives)\b"
     r"|\beven\s+if\s+the\s+user\s+(?:asked|asks|names|named|specified|specifies|chose|chooses|wants|wanted|"
     r"requested|requests|said|says|gave)\b"
     r"|\binstead\s+of\s+(?:what|the\s+(?:one|value|address|recipient|path|name))\s+the\s+user\b"
     rf"|\b(?:always|automatically)\s+(?:change|replace|set|rewrite|switch|modify|redirect)\b{_GAP}\bto\b"
     r"|\b(?:must|should|shall)\s+always\s+(?:be\s+set\s+to|include|contain|point\s+to|go\s+to|be\s+sent\s+to)\b"
     rf"|\b(?:add|append|include|insert|prepend)\b{_GAP}\bto\s+{_ANY}\s+(?:\w+\s+){{0,2}}?(?:messages?|e?mails?|"
     r"quer(?:y|ies)|requests?|calls?|invites?|drafts?|posts?|searche?s?)\b"
     r"|\b(?:also|always|add|include|secretly|silently)\s+(?:a\s+)?bcc\b"
     rf"|\bwhen\s+(?:using|calling|invoking)\s+{_TOOL}{_GAP}\b(?:set|change|add|use|replace|append|always|must|"
     r"should)\b"
     rf"|\b(?:for|on|in)\s+{_ANY}\s+{_TOOL}\s+(?:call|request|invocation)s?\b"
     rf"|\b(?:passed|sent|given)\s+to\s+{_TOOL}\s+(?:should|must)\b"),
    ("tells the model how to use other servers' tools (shadowing)",
     r"\bside[ -]effects?\s+on\s+(?:the\s+)?(?:also\s+present\s+)?"
     r"|\b(?:while|when)\s+this\s+(?:tool|server)\s+is\s+(?:available|connected|present|installed|enabled|active|"
     r"listed)\b|\bthe\s+presence\s+of\s+this\s+(?:tool|server)\b"
     r"|\b(?:another|any\s+other|every\s+other)\s+server(?:'s)?\b"
     rf"|\bthe\s+\w+\s+server(?:'s)?\s+{_TOOL}|\b{_TOOL}\s+(?:tool\s+)?(?:of|from|on)\s+the\s+\w+\s+server\b"
     rf"|\bwhen\s+(?:\(\w+\)\s+)?{_TOOL}\s+is\s+(?:invoked|called|used|run)\b{_GAP}\b(?:change|set|send|copy|"
     r"replace|add|make\s+sure)\b"
     r"|\b(?:route|redirect|send|forward)\s+(?:every|all|each)\s+(?:\w+\s+)?(?:invites?|e?mails?|messages?|"
     r"requests?|calls?)\s+through\s+this\b"
     rf"|\b{_TOOL}\s+(?:tool\s+)?must\s+(?:send|copy|forward|include|use|push|go|cc|bcc)\b"),
    ("says a tool is gone and sends the model elsewhere (redirection)",
     r"\bthis\s+tool\s+(?:is|has\s+been)\s+(?:no\s+longer\s+available|(?:temporarily\s+)?disabled|removed|"
     r"discontinued|broken|retired)\b"
     r"|\b(?:deprecated|disabled|removed)\s+(?:due\s+to|because\s+of|for)\s+(?:security|maintenance)\b"
     r"|\byou\s+must\s+redirect\b"
     rf"|\b(?:do\s+not|don't|never)\s+(?:call|use)\s+{_TOOL}\s+(?:from|of|on)\s+the\b"),
    ("tells the model to prefer this tool over any other (preference manipulation)",
     r"\b(?:always|only)\s+(?:prefer|choose|select|pick)\s+this\s+(?:tool|one|function|server|service)"
     r"\b(?!\s+(?:when|for|if|to)\b)"
     rf"|\bprefer\s+this\s+(?:tool|one|function)\s+(?:over|to|instead)\b{_GAP}\b(?:any|all|every|other)\b"
     r"|\b(?:instead\s+of|over|rather\s+than)\s+(?:any|all|every)\s+other\b"
     r"|\b(?:this|it)\s+is\s+the\s+(?:best|most\s+\w+|only\s+(?:reliable|trusted|safe))\s+(?:\w+\s+)?"
     r"(?:tool|search|service|api|server)s?\b"
     r"|\bthe\s+(?:best|most\s+\w+)\s+(?:\w+\s+)?(?:tool|search|service|api|server)\s+(?:in\s+the\s+world|"
     r"available|ever|there\s+is)\b"
     r"|\b(?:never|don't|do\s+not)\s+use\s+(?:any\s+)?other\s+(?:\w+\s+)?tools?\b"
     r"|\boutperforms\s+(?:every|all|any)\b"
     r"|\b(?:trusted|top[- ]rated|recommended|endorsed|preferred)\s+by\s+(?:millions|openai|anthropic|google|"
     r"microsoft|experts|professionals)\b"
     r"|\bwhenever\s+(?:several|multiple|other|many)\s+tools\b"
     r"|\buse\s+this\s+tool\s+first\s+for\s+(?:all|any|every)\b"),
    ("claims to be another server's tool or an official one (impersonation)",
     r"\b(?:this\s+is|i\s+am|it\s+is|this\s+tool\s+is)\s+(?:the\s+)?(?:official|real|original|genuine|verified|"
     rf"authentic|same)\b{_GAP}\b(?:tool|server|integration|version)\b"
     r"|\bprovided\s+by\s+the\s+(?:official\s+)?\w+\s+(?:mcp\s+)?server\b"
     r"|\bbelongs\s+to\s+the\s+(?:trusted\s+|official\s+)?\w+\s+server\b"
     rf"|\b(?:supersedes|replaces)\s+(?:every|all|any|the)\b{_GAP}\b(?:tools?|{_TOOL})"
     r"|\bverified\s+(?:anthropic|openai|github|google|microsoft|slack|mcp)\b"
     r"|\bofficial\s+(?:anthropic|openai|github|google|microsoft|slack|notion|mcp)\s+(?:\w+\s+)?"
     r"(?:tool|integration|server|connector)\b"
     r"|\bin\s+favou?r\s+of\s+this\s+(?:tool|one|server)\b"
     rf"|\bsame\s+{_TOOL}\s+tool\s+as\b"),
    ("carries a shell command for the model to run",
     r"\bcurl\b[^\n]{0,160}\|\s*(?:sudo\s+)?(?:ba|z|k)?sh\b"
     r"|\bwget\b[^\n]{0,160}(?:\|\s*(?:sudo\s+)?(?:ba|z)?sh\b|-q?O-)"
     r"|\brm\s+-(?:rf|fr|r)\b|\bsudo\s+(?:-[a-z]+\b|[a-z])"
     r"|(?<![\w.])\.(?:bashrc|zshrc|bash_profile|profile)\b|\bcrontab\b|\bauthorized_keys\b"
     r"|/dev/tcp/|\bnc\s+-[a-z]*e\b|\bchmod\s+(?:\+x|[0-7]{3})\b|\bbase64\s+(?:-d|--decode)\b"
     r"|\b(?:execute|run)\s+the\s+following\b|\b(?:execute|run)\s+this\s+(?:\w+\s+)?(?:command|script)\b"
     r"|&&\s*(?:echo|curl|wget|rm|cat|sudo)\b|\$\((?:date|whoami|id|cat|curl|env)\b|\becho\s+\$[A-Z_]{2,}"
     r"|\bgit\s+push\s+--force\b"),
    ("tells the model to contact an outside address (callback)",
     r"\b(?:access|visit|contact|notify|ping|post\s+to|report\s+to|make\s+a\s+(?:network\s+)?request\s+to)\b"
     r"[^\n]{0,80}?\b(?:endpoint|webhook|callback|server)\s+at\s+https?://"
     r"|\b(?:must|should|always|first|also)\s+(?:\w+\s+){0,2}?(?:send|make)\s+(?:a\s+)?(?:network\s+)?request\s+"
     r"to\s+https?://"),
    ("tells the model to put data in a link or an image URL (exfiltration)",
     r"!\[[^\]\n]*\]\(\s*https?://[^)\s]*[?&][^)\s]*\)"
     r"|\bimage\b[^\n]{0,40}?\burl\b[^\n]{0,120}?\b(?:followed\s+by|containing|carrying|including)\b"
     r"|https?://[^\s\"')]*[?&]\w+=(?:\{|<|\$|SUMMARY\b|DATA\b)"
     r"|\brender\s+the\s+image\s+https?://\S*[?&]"),
    ("tells the model what to tell the user (a scripted message)",
     r"\b(?:report|say|state|announce|tell|display|show)\b[^\n]{0,60}?\bto\s+the\s+user\s*:\s*['\"]"
     r"|\band\s+(?:then\s+)?(?:state|say|announce|report)\s+['\"]"
     rf"|\bpresent\b{_GAP}\bas\s+['\"][^'\"\n]{{3,60}}['\"]\s+to\s+the\s+user\b"
     rf"|\b(?:halt|abort|stop)\s+the\s+(?:operation|request|task)\b{_GAP}\binform\s+the\s+user\b"),
    ("gives the model a task beyond the call (you must also …, mandatory for all requests)",
     r"\byou\s+must\s+also\s+(?!be\b)\w+"
     r"|\b(?:this|it)\s+is\s+(?:mandatory|required)\s+for\s+(?:all|every|each)\s+(?:\w+\s+){0,3}?"
     r"(?:requests?|calls?|operations?|queries|searches)\b"),
    ("poses as a message from the user or the system",
     r"\b(?:an\s+)?important\s+message\s+from\s+(?:the\s+)?(?:user|system|admin|developer|operator)\b"
     r"|\bsigned,?\s+the\s+user\b|\bdeveloper\s+mode\b|\bnew\s+instructions\s+follow\b"
     r"|\b(?:safety|security)\s+(?:rules|guidelines|restrictions|filters)\s+(?:are|is)\s+(?:now\s+)?"
     r"(?:suspended|disabled|lifted|off|removed)\b"),
    ("asks for the conversation, the system prompt or the model's identity",
     r"\bsystem\s+prompt\b"
     r"|\b(?:full|whole|entire|complete)\s+(?:conversation|chat|dialogue|transcript)\b"
     r"|\bconversation\s+(?:so\s+far|history)\b|\b(?:chat|query)\s+history\b"
     r"|\b(?:all|every)\s+(?:earlier|previous|prior|past)\s+messages\b"
     r"|\b(?:earlier|previous|prior|latest|last)\s+(?:chat\s+)?messages\b"
     r"|\bfrom\s+(?:earlier|previous|prior|past)\s+messages\b"
     r"|\b(?:name|version|identity)\s+of\s+the\s+(?:llm|model|ai|assistant|agent)\b"
     r"|\b(?:names|list|descriptions)\s+(?:and\s+descriptions\s+)?of\s+(?:every|all|each)\s+(?:other\s+)?tools?\b"
     r"|\btools\s+you\s+(?:can\s+use|have\s+access\s+to)\b"),
)
# For speed (every listing is scanned): what a text must hold for each pattern to match at all. Each
# entry is alternatives separated by spaces, each a word or words joined by "+" that must all be
# there (`text.words`: lowercase ASCII words, and "~", "$", "&"); at least one alternative per alternative of
# the pattern (tests/catalogue/test_poison_corpus.py checks the gate drops no match).
_PATH_WORDS: Final = ("~ ssh rsa dsa ecdsa ed25519 aws env netrc pgpass npmrc pypirc credentials kube docker passwd "
                      "shadow sudoers mcp claude cursor gh gnupg wallet bash zsh")
_WORDS: Final = (
    "ignore disregard forget override longer your+goal your+task your+instructions your+instruction your+objective "
    "your+purpose",
    _PATH_WORDS + " credential api apikey private secret access token tokens password passwords secrets cookies seed",
    _PATH_WORDS,
    "seed recovery mnemonic wallet cvv cvc card+code secret private password saved stored session",
    "user keep mention reveal disclose silently secretly covertly quietly",
    "before",
    "whenever time+each time+every time+any after+tool after+tools after+function after+functions any+call "
    "any+invoke any+use any+run any+execute every+call every+invoke every+use every+run every+execute each+call "
    "each+invoke each+use each+run each+execute all+call all+invoke all+use all+run all+execute user+when user+if",
    "regardless whatever even+user instead+user automatically always+to always+set always+include always+contain "
    "always+point always+go always+sent any+to every+to each+to all+to bcc using calling invoking passed sent given "
    "invocation invocations " + " ".join(f"{a}+{c}" for a in ("any", "every", "each", "all")
                                         for c in ("call", "calls", "request", "requests")),
    "side+effect side+effects available connected present installed enabled active listed presence server "
    "when+invoked when+called when+used when+run through+route through+redirect through+send through+forward "
    "must+send must+copy must+forward must+include must+use must+push must+go must+cc must+bcc",
    "available disabled removed discontinued broken retired deprecated redirect not+from not+of not+on don+from "
    "don+of don+on never+from never+of never+on",
    "prefer choose select pick other best most only+reliable only+trusted only+safe outperforms millions openai "
    "anthropic google microsoft experts professionals whenever+tools first+use",
    "official real original genuine verified authentic same provided belongs supersedes replaces favor favour",
    "curl wget rm sudo bashrc zshrc bash_profile profile crontab authorized tcp nc chmod base64 execute+command "
    "execute+script run+command run+script push+force execute+following run+following &+echo &+curl &+wget &+rm "
    "&+cat &+sudo $+date $+whoami $+id $+cat $+curl $+env $+echo",
    "http https",
    "http https image",
    "user+report user+say user+state user+announce user+tell user+display user+show state say announce report "
    "present+user halt+user abort+user stop+user",
    "also+must mandatory+this mandatory+it required+this required+it",
    "message+important signed developer+mode follow+instructions safety security",
    "prompt conversation chat dialogue transcript history messages llm model ai assistant agent tools+you "
    "tools+names tools+list tools+descriptions tool+names tool+list tool+descriptions",
)


READ_SECRETS: Final = _RULES[1][0]
NAMES_SECRETS: Final = _RULES[2][0]

# The patterns whose gaps may cross a sentence's end ("[^\n]": a URL or a command has dots in it).
_WHOLE: Final = frozenset({"carries a shell command for the model to run",
                           "tells the model to contact an outside address (callback)",
                           "tells the model to put data in a link or an image URL (exfiltration)"})


class Rule(NamedTuple):
    why: str
    rx: re.Pattern[str]
    words: frozenset[str]                   # one of these words alone lets the pattern run
    together: tuple[frozenset[str], ...]    # or all the words of one of these
    whole: bool                             # may span sentences (else each sentence is gated apart)


def _rule(why: str, rx: str, gate: str) -> Rule:
    alternatives = gate.split()
    return Rule(why, re.compile(rx, re.IGNORECASE), frozenset(a for a in alternatives if "+" not in a),
                tuple(frozenset(a.split("+")) for a in alternatives if "+" in a), why in _WHOLE)


INSTRUCTIONS: Final[tuple[Rule, ...]] = tuple(_rule(why, rx, gate) for (why, rx), gate in zip(_RULES, _WORDS,
                                                                                               strict=True))


def _index() -> tuple[dict[str, frozenset[int]], dict[str, tuple[tuple[int, frozenset[str]], ...]]]:
    alone: dict[str, set[int]] = {}
    together: dict[str, list[tuple[int, frozenset[str]]]] = {}
    for i, rule in enumerate(INSTRUCTIONS):
        for w in rule.words:
            alone.setdefault(w, set()).add(i)
        for group in rule.together:
            together.setdefault(min(group), []).append((i, group))
    return {w: frozenset(s) for w, s in alone.items()}, {w: tuple(g) for w, g in together.items()}


_ALONE, _TOGETHER = _index()


def candidates(held: frozenset[str]) -> set[int]:
    """The indexes (in INSTRUCTIONS) of the patterns a text holding the words `held` may match: word
    lookups, not a pass over every pattern (every listing is scanned)."""
    found: set[int] = set()
    for w in held:
        alone = _ALONE.get(w)
        if alone:
            found |= alone
        groups = _TOGETHER.get(w)
        if groups:
            found.update(i for i, group in groups if group <= held)
    return found


MARKUP: Final = re.compile(
    r"</?\s*(?:important|system|instructions?|secret|hidden|admin|critical|information)\b[^>]{0,40}>"
    r"|<\|im_(?:start|end)\|>|<\|(?:system|user|assistant)\|>|\[/?INST\]|<<\s*/?SYS\s*>>"
    r"|^[ \t]*#{1,6}[ \t]*system\b|\[\s*(?:system|admin|developer)(?:\s+(?:override|message|notice|prompt))?\s*\]",
    re.IGNORECASE | re.MULTILINE)
COMMENT: Final = re.compile(r"^[ \t]*\[[^\]\n]{0,40}\]:[ \t]*(?:#|<>)|<!--", re.MULTILINE)
