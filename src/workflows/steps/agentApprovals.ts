import { Either, ParseResult, Schema } from "effect"
import type { PendingApproval } from "../../agents/approvals/ApprovalStore.js"
import { Conflict, ValidationError } from "../../core/errors.js"
import type { Step } from "../definition/WorkflowDefinition.js"
import type { Suspension } from "../execution/ExecutionRows.js"

/**
 * Issue #32 item 1 (settled 5): an andAgent step whose agent call stops on tool approvals suspends the
 * execution with `{approvals: [...]}`; it is resumed with `{answers: [...]}`, one per approval, and the
 * step continues the stored generation (the approval rows), without prompting the model again.
 */
export const APPROVAL_REASON = "tool-approval"

/** The reason an approval the execution waited on was denied when it expired. */
export const EXPIRED_REASON = "expired"

const Answer = Schema.Struct({
  approvalId: Schema.String.pipe(Schema.maxLength(200)),
  approved: Schema.Boolean,
  reason: Schema.optional(Schema.String.pipe(Schema.maxLength(1000)))
})

/** What a client resumes an approval suspension with (nothing else: `expired` is the expiry's own). */
const ApprovalResume = Schema.Struct({ answers: Schema.Array(Answer).pipe(Schema.minItems(1), Schema.maxItems(100)) })
const decodeResume = Schema.decodeUnknownEither(ApprovalResume, { errors: "all", onExcessProperty: "error" })

/** What an andAgent step suspended on tool approvals is resumed with (`resumeWorkflow` types it so). */
export interface ApprovalAnswers {
  readonly answers: ReadonlyArray<
    { readonly approvalId: string; readonly approved: boolean; readonly reason?: string | undefined }
  >
}

/** The resume data the step reads: the answers, and whether they are the expiry's denials. */
export interface ApprovalResumeData extends ApprovalAnswers {
  readonly expired?: true | undefined
}

/** The approvals a suspension waits on, when it is an andAgent step's approval suspension. */
export const approvalsOf = (suspension: Suspension | undefined): ReadonlyArray<PendingApproval> | undefined => {
  if (suspension?.reason !== APPROVAL_REASON) return undefined
  const data = suspension.data
  if (typeof data !== "object" || data === null || !("approvals" in data) || !Array.isArray(data.approvals)) {
    return undefined
  }
  return data.approvals as ReadonlyArray<PendingApproval>
}

/** The andAgent step at `path` below `step` (through child workflows: `child/ask`), if that is one. */
const andAgentAt = (step: Step, path: ReadonlyArray<string>): boolean => {
  if (path[0] !== step.id) return false
  if (path.length === 1) return step.type === "andAgent"
  if (step.type !== "andWorkflow") return false
  const inner = step.workflow.steps.find((one) => one.id === path[1])
  return inner !== undefined && andAgentAt(inner, path.slice(1))
}

/**
 * Whether resuming `step` from `suspension` answers its approvals: the step it stopped at is an andAgent
 * one, this one or one inside its child workflows.
 */
export const answersApprovals = (step: Step, suspension: Suspension | undefined): boolean =>
  suspension !== undefined && approvalsOf(suspension) !== undefined && andAgentAt(step, suspension.stepId.split("/"))

const invalid = (message: string) => ValidationError.fromIssues([{ path: ["answers"], message }], ["resumeData"])

/**
 * A client's resume data for an approval suspension: its shape, then one answer for each approval the
 * execution waits on (400 naming an unknown, a repeated or a missing one); 409 once one has expired
 * (its due work denies them all).
 */
export const approvalResumeData = (
  suspension: Suspension,
  resumeData: unknown
): Either.Either<ApprovalResumeData, ValidationError | Conflict> =>
  Either.flatMap(
    Either.mapLeft(decodeResume(resumeData), (error) =>
      ValidationError.fromIssues(ParseResult.ArrayFormatter.formatErrorSync(error), ["resumeData"])),
    (resume): Either.Either<ApprovalResumeData, ValidationError | Conflict> => {
      const approvals = approvalsOf(suspension) ?? []
      const pending = new Set(approvals.map((one) =>
        one.approvalId
      ))
      const ids = resume.answers.map((one) => one.approvalId)
      const unknown = ids.find((id) => !pending.has(id))
      if (unknown !== undefined) {
        return Either.left(
          invalid(`approval ${unknown.slice(0, 64)} is not one this execution waits on`)
        )
      }
      if (new Set(ids).size !== ids.length) return Either.left(invalid("must name each approval once"))
      const missing = [...pending].filter((id) => !ids.includes(id))
      if (missing.length > 0) {
        return Either.left(
          invalid(`must answer every pending approval; missing: ${missing.slice(0, 10).join(", ")}`)
        )
      }
      const now = new Date().toISOString()
      const expired = approvals.find((one) => one.expiresAt <= now)
      if (expired !== undefined) {
        return Either.left(
          new Conflict({ message: `Approval ${expired.approvalId} expired at ${expired.expiresAt}` })
        )
      }
      return Either.right({ answers: resume.answers })
    }
  )

/** The expiry's resume data: every approval the execution waits on, denied as expired. */
export const expiredResumeData = (suspension: Suspension): ApprovalResumeData => ({
  answers: (approvalsOf(suspension) ?? []).map((one) => ({
    approvalId: one.approvalId,
    approved: false,
    reason: EXPIRED_REASON
  })),
  expired: true
})

/** The resume data an andAgent step got, when it answers approvals (what `approvalResumeData` or the expiry stored). */
export const asApprovalResume = (resumeData: unknown): ApprovalResumeData | undefined =>
  typeof resumeData === "object" && resumeData !== null && "answers" in resumeData && Array.isArray(resumeData.answers)
    ? resumeData as ApprovalResumeData
    : undefined

/** The earliest expiry of the approvals a step stopped on: when the expiry answers them (the row's `wake_at`). */
export const firstExpiry = (pending: ReadonlyArray<PendingApproval>): string =>
  pending.map((one) => one.expiresAt).reduce((a, b) => (a < b ? a : b))
