package hf

// gpt2Scanner matches gpt2Pattern, the ByteLevel pre-tokenizer's own regex:
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
type gpt2Scanner struct{}

func (gpt2Scanner) findAll(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		end := gpt2MatchAt(s, i)
		dst = append(dst, [2]int{i, end})
		i = end
	}
	return dst
}

// gpt2Contraction returns the end of 's, 't, 're, 've, 'm, 'll or 'd
// (lower case only) at s[i:], or -1.
func gpt2Contraction(s string, i int) int {
	if s[i] != '\'' || i+1 >= len(s) {
		return -1
	}
	j := i + 1
	switch s[j] {
	case 's', 't', 'm', 'd':
		return j + 1
	case 'r', 'v':
		if j+1 < len(s) && s[j+1] == 'e' {
			return j + 2
		}
	case 'l':
		if j+1 < len(s) && s[j+1] == 'l' {
			return j + 2
		}
	}
	return -1
}

// classRunEnd returns the end of the run of characters of class cls from j;
// clsSpace also takes newlines.
func classRunEnd(s string, j int, cls uint8) int {
	for j < len(s) {
		c, n := classAt(s, j)
		if c == clsNewline {
			c = clsSpace
		}
		if c != cls {
			break
		}
		j += n
	}
	return j
}

func gpt2MatchAt(s string, i int) int {
	if e := gpt2Contraction(s, i); e >= 0 {
		return e
	}
	c0, n0 := classAt(s, i)
	if c0 == clsNewline {
		c0 = clsSpace
	}
	// ' ?\p{L}+', ' ?\p{N}+' and ' ?[^\s\p{L}\p{N}]+', in that order: a
	// leading space joins a following run of any of the three kinds.
	if s[i] == ' ' && i+1 < len(s) {
		if c1, _ := classAt(s, i+1); c1 == clsLetter || c1 == clsNumber || c1 == clsOther {
			return classRunEnd(s, i+1, c1)
		}
	}
	if c0 != clsSpace {
		return classRunEnd(s, i+n0, c0)
	}
	// \s+(?!\S) | \s+
	end, lastStart := i, i
	for end < len(s) {
		c, n := classAt(s, end)
		if c != clsSpace && c != clsNewline {
			break
		}
		lastStart = end
		end += n
	}
	if end == len(s) || lastStart == i {
		return end
	}
	return lastStart
}
