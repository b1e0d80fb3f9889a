"""bats_shell - the shell of bats files, parsed enough to know each
command's role: tokens with line numbers (heredoc bodies, quoted strings
and comments are not commands), statements, pipelines, simple and compound
commands (if, while, for, case, { }, ( ), functions, @test).  Used by
tests/lint-bats; not a full shell grammar (no coproc, select, aliases).
"""

META = set("|&;()<>\n")


class ShellSyntaxError(Exception):
    pass



class Tok:
    __slots__ = ("kind", "text", "line", "subs", "quoted")

    def __init__(self, kind, text, line, subs=None, quoted=False):
        self.kind = kind    # 'w' word, 'op' operator, 'nl' newline, 'redir'
        self.text = text
        self.line = line
        self.subs = subs or []   # token lists of $(...) inside the word
        self.quoted = quoted     # the word had quotes (not a keyword)

    def __repr__(self):
        return "%s:%r@%d" % (self.kind, self.text, self.line)


class Lexer:
    """Shell tokens with line numbers; heredoc bodies are skipped."""

    def __init__(self, text):
        self.s = text
        self.i = 0
        self.line = 1
        self.heredocs = []   # (delimiter, strip_tabs) waiting for a newline

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def at(self, chars, k=0):
        c = self.peek(k)
        return c != "" and c in chars

    def adv(self, n=1):
        for _ in range(n):
            if self.i < len(self.s):
                if self.s[self.i] == "\n":
                    self.line += 1
                self.i += 1

    def skip_heredocs(self):
        # called just after a newline token: the bodies follow, in order
        for delim, strip in self.heredocs:
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                if end < 0:
                    end = len(self.s)
                body_line = self.s[self.i:end]
                if strip:
                    body_line = body_line.lstrip("\t")
                self.i = min(end + 1, len(self.s))
                self.line += 1
                if body_line == delim:
                    break
            else:
                raise ShellSyntaxError("heredoc %r is not closed" % delim)
        self.heredocs = []

    def tokens(self, closer=None):
        """Tokens until end of input, or until an unmatched `)` when
        closer is ')' (the end of a $( ) or <( ))."""
        out = []
        depth = 0
        while True:
            c = self.peek()
            if c == "":
                if closer:
                    raise ShellSyntaxError("unclosed $( at end of file")
                return out
            if c in " \t":
                self.adv()
                continue
            if c == "\\" and self.peek(1) == "\n":
                self.adv(2)
                continue
            if c == "#":
                while self.peek() not in ("", "\n"):
                    self.adv()
                continue
            if c == "\n":
                out.append(Tok("nl", "\n", self.line))
                self.adv()
                if self.heredocs:
                    self.skip_heredocs()
                continue
            if c == ")" and closer and depth == 0:
                self.adv()
                return out
            if c == "(" and self.peek(1) == "(":
                out.append(self.arith())
                continue
            if c in "<>" and self.peek(1) == "(":
                line = self.line
                self.adv(2)
                sub = self.tokens(")")
                out.append(Tok("w", "<(...)", line, [sub]))
                continue
            if c in "<>":
                out.append(self.redirection())
                continue
            if c in "|&;()":
                line = self.line
                two = c + self.peek(1)
                if two in ("&&", "||", ";;", "|&", ";&"):
                    op = two
                    if two == ";;" and self.peek(2) == "&":
                        op = ";;&"
                elif c == "&" and self.peek(1) == ">":
                    out.append(self.redirection())
                    continue
                else:
                    op = c
                self.adv(len(op))
                if op == "(":
                    depth += 1
                elif op == ")":
                    depth -= 1
                out.append(Tok("op", op, line))
                continue
            out.append(self.word())
            # a word of digits right before > or < is a file descriptor
            if out[-1].text.isdigit() and self.at("<>") and \
                    self.peek(1) != "(":
                fd = out.pop()
                r = self.redirection()
                r.text = fd.text + r.text
                out.append(r)

    def arith(self):
        line = self.line
        start = self.i
        self.adv(2)
        depth = 2
        while depth and self.peek():
            c = self.peek()
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            self.adv()
        return Tok("w", self.s[start:self.i], line)

    def redirection(self):
        line = self.line
        start = self.i
        if self.s.startswith("<<<", self.i):
            self.adv(3)
            tok = Tok("redir", "<<<", line)
        elif self.s.startswith("<<", self.i):
            self.adv(2)
            strip = False
            if self.peek() == "-":
                strip = True
                self.adv()
            while self.at(" \t"):
                self.adv()
            w = self.word()
            delim = w.text.replace("'", "").replace('"', "").replace("\\", "")
            self.heredocs.append((delim, strip))
            return Tok("redir", "<<" + delim, line)
        else:
            while self.at("<>&|"):
                if self.at("&|") and self.i > start and \
                        self.s[self.i - 1] not in "<>":
                    break
                self.adv()
            # >&2, <&0, >&-
            while self.peek().isdigit() or self.peek() == "-":
                self.adv()
            tok = Tok("redir", self.s[start:self.i], line)
        # the target word
        while self.at(" \t"):
            self.adv()
        if self.peek() and self.peek() not in META:
            self.word()
        elif self.at("<>") and self.peek(1) == "(":
            self.adv(2)
            self.tokens(")")
        return tok

    def word(self):
        line = self.line
        start = self.i
        subs = []
        quoted = False
        while True:
            c = self.peek()
            if c == "" or c in " \t" or c in META:
                # name=( array ) assignment
                if c == "(" and self.i > start and self.s[self.i - 1] == "=":
                    self.balanced_parens()
                    continue
                break
            if c == "\\":
                self.adv(2)
            elif c == "'":
                quoted = True
                self.adv()
                while self.peek() not in ("'", ""):
                    self.adv()
                self.adv()
            elif c == '"':
                quoted = True
                self.adv()
                self.dquote(subs)
            elif c == "$":
                self.dollar(subs)
            elif c == "`":
                quoted = True
                self.adv()
                while self.peek() not in ("`", ""):
                    if self.peek() == "\\":
                        self.adv()
                    self.adv()
                self.adv()
            else:
                self.adv()
        return Tok("w", self.s[start:self.i], line, subs, quoted)

    def balanced_parens(self):
        depth = 0
        while self.peek():
            c = self.peek()
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    self.adv()
                    return
            elif c in "'\"":
                q = c
                self.adv()
                while self.peek() not in (q, ""):
                    if q == '"' and self.peek() == "\\":
                        self.adv()
                    self.adv()
            self.adv()

    def dquote(self, subs):
        while True:
            c = self.peek()
            if c == "":
                raise ShellSyntaxError("unclosed double quote")
            if c == '"':
                self.adv()
                return
            if c == "\\":
                self.adv(2)
            elif c == "$":
                # $( ) inside quotes: its status is lost anyway (argument)
                self.dollar([])
            elif c == "`":
                self.adv()
                while self.peek() not in ("`", ""):
                    self.adv()
                self.adv()
            else:
                self.adv()

    def dollar(self, subs):
        if self.peek(1) == "(" and self.peek(2) == "(":
            self.adv()
            self.arith()
        elif self.peek(1) == "(":
            self.adv(2)
            subs.append(self.tokens(")"))
        elif self.peek(1) == "{":
            self.adv(2)
            depth = 1
            while depth and self.peek():
                c = self.peek()
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                elif c == "\\":
                    self.adv()
                elif c == "'":
                    self.adv()
                    while self.peek() not in ("'", ""):
                        self.adv()
                elif c == '"':
                    self.adv()
                    self.dquote([])
                    continue
                self.adv()
        else:
            self.adv()


# ---- parser: a small shell grammar, enough to know each command's role ---

class Simple:
    def __init__(self, words, line):
        self.words = words          # Tok list
        self.line = line

    def first(self):
        return self.words[0].text if self.words else ""


class Compound:
    def __init__(self, kind, line):
        self.kind = kind            # if while for case brace subshell test func
        self.line = line
        self.conds = []             # statement lists run as conditions
        self.bodies = []            # statement lists run as commands
        self.name = ""


class Pipeline:
    def __init__(self, bang, cmds, line):
        self.bang = bang
        self.cmds = cmds
        self.line = line


class Statement:
    def __init__(self, items, line):
        self.items = items          # [(op or None, Pipeline)]
        self.line = line


RESERVED_END = {"then", "elif", "else", "fi", "do", "done", "esac", "}"}


class Parser:
    def __init__(self, toks):
        self.t = toks
        self.i = 0

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else None

    def at_word(self, *texts):
        k = self.peek()
        return k is not None and k.kind == "w" and not k.quoted and \
            k.text in texts

    def at_op(self, *texts):
        k = self.peek()
        return k is not None and k.kind == "op" and k.text in texts

    def next(self):
        k = self.peek()
        if k is None:
            raise ShellSyntaxError("unexpected end of file")
        self.i += 1
        return k

    def expect_word(self, text):
        if not self.at_word(text):
            k = self.peek()
            where = k.line if k else "end of file"
            raise ShellSyntaxError("line %s: expected `%s`" % (where, text))
        self.next()

    def skip_nl(self):
        while self.peek() is not None and self.peek().kind == "nl":
            self.next()

    def parse_list(self, end_words=(), end_ops=()):
        stmts = []
        while True:
            while self.peek() is not None and (
                    self.peek().kind == "nl" or self.at_op(";", "&")):
                self.next()
            k = self.peek()
            if k is None:
                return stmts
            if self.at_word(*end_words) or self.at_op(*end_ops):
                return stmts
            if k.kind == "w" and not k.quoted and k.text in RESERVED_END:
                raise ShellSyntaxError("line %d: unexpected `%s`" % (k.line, k.text))
            if k.kind == "op" and k.text not in ("(",):
                raise ShellSyntaxError("line %d: unexpected `%s`" % (k.line, k.text))
            stmts.append(self.and_or())

    def and_or(self):
        line = self.peek().line
        items = [(None, self.pipeline())]
        while self.at_op("&&", "||"):
            op = self.next().text
            self.skip_nl()
            items.append((op, self.pipeline()))
        return Statement(items, line)

    def pipeline(self):
        if self.peek() is None:
            raise ShellSyntaxError("unexpected end of file")
        line = self.peek().line
        bang = False
        while self.at_word("!"):
            self.next()
            bang = not bang
        cmds = [self.command()]
        while self.at_op("|", "|&"):
            self.next()
            self.skip_nl()
            cmds.append(self.command())
        return Pipeline(bang, cmds, line)

    def redirs(self):
        while self.peek() is not None and self.peek().kind == "redir":
            self.next()

    def command(self):
        k = self.peek()
        if k is None:
            raise ShellSyntaxError("command expected at end of file")
        line = k.line
        if k.kind == "op" and k.text == "(":
            self.next()
            c = Compound("subshell", line)
            c.bodies.append(self.parse_list(end_ops=(")",)))
            self.next()
            self.redirs()
            return c
        if k.kind == "w" and not k.quoted:
            kw = k.text
            if kw == "if":
                return self.if_cmd()
            if kw in ("while", "until"):
                self.next()
                c = Compound("while", line)
                c.conds.append(self.parse_list(("do",)))
                self.expect_word("do")
                c.bodies.append(self.parse_list(("done",)))
                self.expect_word("done")
                self.redirs()
                return c
            if kw == "for":
                self.next()
                while self.peek() is not None and not (
                        self.at_word("do") or self.at_op(";") or
                        self.peek().kind == "nl"):
                    self.next()
                self.skip_sep()
                self.expect_word("do")
                c = Compound("for", line)
                c.bodies.append(self.parse_list(("done",)))
                self.expect_word("done")
                self.redirs()
                return c
            if kw == "case":
                return self.case_cmd()
            if kw == "{":
                self.next()
                c = Compound("brace", line)
                c.bodies.append(self.parse_list(("}",)))
                self.expect_word("}")
                self.redirs()
                return c
            if kw == "@test":
                self.next()
                c = Compound("test", line)
                while self.peek() is not None and not self.at_word("{"):
                    c.name += self.next().text + " "
                self.expect_word("{")
                c.bodies.append(self.parse_list(("}",)))
                self.expect_word("}")
                return c
            if kw == "function":
                self.next()
                name = self.next().text
                if self.at_op("("):
                    self.next()
                    self.next()
                return self.func_body(name, line)
            if kw == "[[":
                words = [self.next()]
                while self.peek() is not None and not self.at_word("]]"):
                    words.append(self.next())
                words.append(self.next())
                self.redirs()
                return Simple(words, line)
        words = []
        while True:
            k = self.peek()
            if k is None or k.kind == "nl":
                break
            if k.kind == "redir":
                self.next()
                continue
            if k.kind == "op":
                if k.text == "(" and len(words) == 1:
                    self.next()
                    if not self.at_op(")"):
                        raise ShellSyntaxError("line %d: `(` after a word" % k.line)
                    self.next()
                    return self.func_body(words[0].text, line)
                break
            words.append(self.next())
        return Simple(words, line)

    def skip_sep(self):
        while self.peek() is not None and (
                self.peek().kind == "nl" or self.at_op(";")):
            self.next()

    def func_body(self, name, line):
        self.skip_nl()
        body = self.command()
        c = Compound("func", line)
        c.name = name
        c.bodies = [[Statement([(None, Pipeline(False, [body], line))], line)]]
        return c

    def if_cmd(self):
        c = Compound("if", self.next().line)
        c.conds.append(self.parse_list(("then",)))
        self.expect_word("then")
        c.bodies.append(self.parse_list(("elif", "else", "fi")))
        while True:
            if self.at_word("elif"):
                self.next()
                c.conds.append(self.parse_list(("then",)))
                self.expect_word("then")
                c.bodies.append(self.parse_list(("elif", "else", "fi")))
            elif self.at_word("else"):
                self.next()
                c.bodies.append(self.parse_list(("fi",)))
            else:
                break
        self.expect_word("fi")
        self.redirs()
        return c

    def case_cmd(self):
        c = Compound("case", self.next().line)
        while self.peek() is not None and not self.at_word("in"):
            self.next()
        self.expect_word("in")
        while True:
            self.skip_nl()
            if self.at_word("esac"):
                self.next()
                break
            if self.peek() is None:
                raise ShellSyntaxError("case without esac")
            # the pattern: words and | up to )
            if self.at_op("("):
                self.next()
            while self.peek() is not None and not self.at_op(")"):
                self.next()
            self.next()
            c.bodies.append(self.parse_list(("esac",), (";;", ";&", ";;&")))
            if self.at_op(";;", ";&", ";;&"):
                self.next()
        self.redirs()
        return c



# ---- walking the parse ------------------------------------------------

def cmd_name(cmd):
    if isinstance(cmd, Simple):
        # skip assignments (VAR=x cmd)
        for w in cmd.words:
            if "=" in w.text.split("[")[0] and not w.text.startswith("=") \
                    and w.text.split("=")[0].replace("_", "a").isalnum():
                continue
            return w.text
        return ""
    return "(" + cmd.kind + ")"


def func_list(c):
    """The statements of name() { ...; } (or of name() ( ... ))."""
    inner = c.bodies[0][0].items[0][1].cmds[0]
    if isinstance(inner, Compound) and inner.bodies:
        return inner.bodies[0]
    return c.bodies[0]


def unquote(word):
    """The text of a word that is one quoted string, or None."""
    if len(word) >= 2 and word[0] == word[-1] == "'" and \
            "'" not in word[1:-1]:
        return word[1:-1]
    if len(word) >= 2 and word[0] == word[-1] == '"':
        body = word[1:-1]
        out, i = [], 0
        while i < len(body):
            if body[i] == "\\" and i + 1 < len(body) and \
                    body[i + 1] in '"\\$`':
                out.append(body[i + 1])
                i += 2
                continue
            if body[i] == '"':
                return None
            out.append(body[i])
            i += 1
        return "".join(out)
    return None


def simple_commands(stmts):
    """Every simple command of stmts, in order, compound bodies included."""
    for p in all_pipelines(stmts):
        for c in p.cmds:
            if isinstance(c, Simple):
                yield c


def all_pipelines(stmts):
    for s in stmts:
        for _, p in s.items:
            yield p
            for c in p.cmds:
                if isinstance(c, Compound):
                    for b in c.conds + c.bodies:
                        yield from all_pipelines(b)


def last_simple(cmd):
    """The command that decides a brace group's status, or cmd itself."""
    while isinstance(cmd, Compound) and cmd.kind in ("brace", "subshell") \
            and cmd.bodies and cmd.bodies[-1]:
        cmd = cmd.bodies[-1][-1].items[-1][1].cmds[-1]
    return cmd
