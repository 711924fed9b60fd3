// Nothing to configure: the fixture is built as any app would be.
export default {};
