package canon

import "slices"

// QARTOD flag codes (IOOS QARTOD manuals, the flag scheme of IOOS datasets on ERDDAP).
const (
	FlagPass         = 1
	FlagNotEvaluated = 2
	FlagSuspect      = 3
	FlagFail         = 4
	FlagMissing      = 9
)

// Names of the tests and provider marks that set a flag (QC.Failed).
const (
	TestGrossRange   = "gross_range"
	TestSpike        = "spike"
	TestRateOfChange = "rate_of_change"
	TestFlatLine     = "flat_line"
	// ProviderPreliminary: the provider publishes the value before its own quality
	// control (CO-OPS preliminary, NDBC realtime files that its QC'd files supersede).
	ProviderPreliminary = "provider_preliminary"
	// ProviderFlagged: the provider flagged the value (OpenAQ flagInfo.hasFlags).
	ProviderFlagged = "provider_flagged"
	// ProviderRange and ProviderRateOfChange: the provider's own range or rate checks
	// failed (CO-OPS X/N and R flags).
	ProviderRange        = "provider_range"
	ProviderRateOfChange = "provider_rate_of_change"
)

// QC is a measurement's quality: the QARTOD flag and the names of the tests or provider
// marks that set it (empty when it passed or was not evaluated). Stored with every
// measurement; nil on a measurement nobody assessed (an adapter's output before ingest).
type QC struct {
	Flag   int      `json:"flag"`
	Failed []string `json:"failed"`
}

// severity orders flags for "the worst of": pass < not evaluated < suspect < fail;
// missing (9) is worse than none of them here, since a missing value is never stored.
func severity(flag int) int {
	if flag == FlagMissing {
		return 0
	}
	return flag
}

// Worse reports whether flag a is worse than b.
func Worse(a, b int) bool { return severity(a) > severity(b) }

// Mark records on m that test (or provider mark) name gave flag: the measurement's flag
// becomes the worst of its flags, and name joins Failed when the flag is not a pass. A
// test that could not be evaluated passes "" (it names nothing); a provider mark of flag 2
// (provider_preliminary) is named.
func (m *Measurement) Mark(flag int, name string) {
	if m.QC == nil {
		m.QC = &QC{Flag: FlagPass, Failed: []string{}}
	}
	if Worse(flag, m.QC.Flag) {
		m.QC.Flag = flag
	}
	if name != "" && flag != FlagPass && !slices.Contains(m.QC.Failed, name) {
		m.QC.Failed = append(m.QC.Failed, name)
	}
}

// Quality returns m's QC, or "not evaluated" for a value stored before flags were.
func (m Measurement) Quality() QC {
	if m.QC == nil {
		return QC{Flag: FlagNotEvaluated, Failed: []string{}}
	}
	return *m.QC
}

// Good reports whether flag is one the aggregates use by default (pass, not evaluated).
func Good(flag int) bool { return flag == FlagPass || flag == FlagNotEvaluated }
