// The root layout every Next.js app router app needs; the fixture has no pages.
export default function RootLayout({ children }) {
  return children;
}
