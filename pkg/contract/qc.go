package contract

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

// QCFilter is the set of QARTOD flags a qc= parameter keeps, one bit per flag code
// (docs/quality.md). The zero value (a query built in code without one) keeps every flag.
type QCFilter uint16

// QC filters by name: good is pass and not evaluated (the aggregates' default), all
// keeps everything (the readings', area latest's and export's default).
const (
	QCGood QCFilter = 1<<canon.FlagPass | 1<<canon.FlagNotEvaluated
	QCAll  QCFilter = QCGood | 1<<canon.FlagSuspect | 1<<canon.FlagFail | 1<<canon.FlagMissing
)

// qcCodes are the flag codes qc= may list.
var qcCodes = []int{canon.FlagPass, canon.FlagNotEvaluated, canon.FlagSuspect, canon.FlagFail, canon.FlagMissing}

// Keep reports whether a value of flag passes the filter.
func (f QCFilter) Keep(flag int) bool {
	return f == 0 || f == QCAll || (flag >= 0 && flag < 16 && f&(1<<flag) != 0)
}

// All reports whether the filter keeps every flag.
func (f QCFilter) All() bool { return f == 0 || f == QCAll }

// String is the filter as qc= spells it (good, all, or the codes).
func (f QCFilter) String() string {
	switch f {
	case 0, QCAll:
		return "all"
	case QCGood:
		return "good"
	}
	var codes []string
	for _, c := range qcCodes {
		if f&(1<<c) != 0 {
			codes = append(codes, strconv.Itoa(c))
		}
	}
	return strings.Join(codes, ",")
}

// ParseQC reads qc=good|all|<codes> (absent: def). Errors name qc.
func ParseQC(v url.Values, def QCFilter) (QCFilter, error) {
	s := strings.TrimSpace(v.Get("qc"))
	switch s {
	case "":
		return def, nil
	case "all":
		return QCAll, nil
	case "good":
		return QCGood, nil
	}
	var f QCFilter
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || !validCode(n) {
			return def, apierr.Invalid("qc", "want good, all, or a comma-separated list of QARTOD flags 1, 2, 3, 4, 9; got %q", part)
		}
		f |= 1 << n
	}
	if f == 0 {
		return def, apierr.Invalid("qc", "want good, all, or a comma-separated list of QARTOD flags 1, 2, 3, 4, 9; got %q", s)
	}
	return f, nil
}

func validCode(n int) bool {
	for _, c := range qcCodes {
		if c == n {
			return true
		}
	}
	return false
}
